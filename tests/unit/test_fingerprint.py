"""The spec carries a version; a changed contract needs a bump and a CHANGELOG entry."""

from __future__ import annotations

import json
from pathlib import Path

from codegen import fingerprint

ROOT = Path(__file__).resolve().parents[2]


def recorded() -> dict[str, str]:
    data: dict[str, str] = json.loads((ROOT / "spec" / "fingerprint.json").read_text())
    return data


def test_committed_fingerprint_matches_the_spec() -> None:
    assert recorded() == fingerprint.current(), "run `python -m codegen` after a version bump"


def test_a_changed_contract_under_the_same_version_is_refused() -> None:
    stale = {**recorded(), "sha256": "0" * 64}
    _, problems = fingerprint.render(stale, ROOT)
    assert any("bump it in spec/openapi.yaml" in p for p in problems)


def test_a_changed_contract_under_a_new_version_is_accepted() -> None:
    older = {"version": "0.0.1", "sha256": "0" * 64}
    text, problems = fingerprint.render(older, ROOT)
    assert problems == []
    assert json.loads(text) == fingerprint.current()


def test_the_version_needs_a_changelog_section(tmp_path: Path) -> None:
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## 0.0.1\n")
    _, problems = fingerprint.render(recorded(), tmp_path)
    assert problems == [
        f"CHANGELOG.md has no '## {fingerprint.current()['version']}' section for the "
        "spec's version"
    ]
