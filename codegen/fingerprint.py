"""The spec's fingerprint: a hash of the contract, pinned to the version it was released as.

`spec/fingerprint.json` records `{version, sha256}` of the bundled OpenAPI document. When the
contract changes, codegen refuses to record the new hash under the old version: bump
`info.version` in spec/openapi.yaml and add a CHANGELOG.md entry for it first.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from synthorg.contract.spec import bundled_openapi

CHANGELOG = "CHANGELOG.md"


def current() -> dict[str, Any]:
    document = bundled_openapi()
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return {
        "version": document["info"]["version"],
        "sha256": hashlib.sha256(canonical.encode()).hexdigest(),
    }


def render(recorded: dict[str, Any] | None, root: Path) -> tuple[str, list[str]]:
    """The fingerprint file's new text, and the problems that forbid writing it."""
    now = current()
    problems = []
    if recorded and recorded["sha256"] != now["sha256"] and recorded["version"] == now["version"]:
        problems.append(
            f"the contract changed but info.version is still {now['version']}: bump it in "
            f"spec/openapi.yaml and record the change in {CHANGELOG}"
        )
    changelog = root / CHANGELOG
    heading = f"## {now['version']}"
    if not changelog.exists() or heading not in changelog.read_text("utf-8").splitlines():
        problems.append(f"{CHANGELOG} has no '{heading}' section for the spec's version")
    return json.dumps(now, indent=2) + "\n", problems
