"""The contract in spec/: loaded once, and bundled into one self-contained OpenAPI document.

The source keeps schemas in separate 2020-12 files referenced by relative `$ref`s. Connexion,
Schemathesis and readers of `/openapi.json` get one document where every external reference is
rewritten to `#/components/schemas/<Name>`; definition names are unique across files.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import yaml

SCHEMA_FILES = (
    "a2a.json",
    "methods.json",
    "a2a_v1.json",
    "methods_v1.json",
    "jsonrpc.json",
    "config.json",
    "card.json",
    "admin.json",
)


def spec_dir() -> Path:
    override = os.environ.get("SYNTHORG_SPEC_DIR")
    return Path(override) if override else Path(__file__).resolve().parents[2] / "spec"


@cache
def load_schema_files() -> dict[str, dict[str, Any]]:
    """Every schema file by file name, as written."""
    root = spec_dir() / "schemas"
    return {name: json.loads((root / name).read_text("utf-8")) for name in SCHEMA_FILES}


@cache
def load_openapi_source() -> dict[str, Any]:
    loaded = yaml.safe_load((spec_dir() / "openapi.yaml").read_text("utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def all_definitions() -> dict[str, tuple[str, dict[str, Any]]]:
    """Every `$defs` entry of every schema file: name -> (file, schema). Names must be unique."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for file_name, doc in load_schema_files().items():
        for name, schema in doc.get("$defs", {}).items():
            if name in found:
                raise ValueError(f"definition {name!r} is in both {found[name][0]} and {file_name}")
            found[name] = (file_name, schema)
    return found


def ref_target(ref: str) -> str:
    """The definition name a `$ref` (local or cross-file) points at."""
    _, _, pointer = ref.partition("#")
    prefix = "/$defs/"
    if not pointer.startswith(prefix) or "/" in pointer[len(prefix) :]:
        raise ValueError(f"unsupported $ref {ref!r}: only .../#/$defs/<Name> is used")
    return pointer[len(prefix) :]


def _bundled_ref(ref: str) -> str:
    if ref.startswith("#/components/"):
        return ref
    return "#/components/schemas/" + ref_target(ref)


def _rewrite_refs(node: Any) -> Any:
    """Every reference rewritten for the bundle: `$ref`s, and the targets of a discriminator's
    `mapping`, which are references too (OpenAPI 3.1, Discriminator Object)."""
    if isinstance(node, dict):
        return {key: _rewritten(key, value) for key, value in node.items()}
    if isinstance(node, list):
        return [_rewrite_refs(item) for item in node]
    return node


def _rewritten(key: str, value: Any) -> Any:
    if key == "$ref":
        return _bundled_ref(value)
    if key == "discriminator" and isinstance(value, dict) and "mapping" in value:
        mapping = {name: _bundled_ref(ref) for name, ref in value["mapping"].items()}
        return {**value, "mapping": mapping}
    return _rewrite_refs(value)


@cache
def bundled_openapi() -> dict[str, Any]:
    """The OpenAPI document with all schema files inlined under components/schemas."""
    document = _rewrite_refs(load_openapi_source())
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for name, (_, schema) in all_definitions().items():
        schemas[name] = _rewrite_refs(schema)
    return dict(document)
