"""README's config.yaml reference names every key of the config file's schema."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _keys(schema: dict[str, Any], defs: dict[str, Any], seen: set[str]) -> Iterator[str]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen:
            return
        seen.add(name)
        yield from _keys(defs[name], defs, seen)
        return
    for key, sub in (schema.get("properties") or {}).items():
        yield key
        yield from _keys(sub, defs, seen)
    for word in ("items", "additionalProperties"):
        if isinstance(schema.get(word), dict):
            yield from _keys(schema[word], defs, seen)
    for word in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(word) or []:
            yield from _keys(sub, defs, seen)


def test_the_config_reference_lists_every_key_of_the_schema() -> None:
    schema = json.loads((ROOT / "spec" / "schemas" / "config.json").read_text())
    readme = (ROOT / "README.md").read_text()
    start = readme.index("### config.yaml")
    reference = readme[start:readme.index("\n### ", start + 1)]
    keys = set(_keys(schema, schema["$defs"], set()))
    assert "observability" in keys and "enabled" in keys
    missing = sorted(key for key in keys if f"`{key}`" not in reference)
    assert missing == [], f"README's config.yaml reference does not name: {missing}"
