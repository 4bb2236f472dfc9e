"""The official A2A 0.3.0 object shapes, as the official SDK (a test dependency) defines them.

Used to check our own schemas' field names, required lists and enums against the protocol; we
write our schemas ourselves and compare only names.
"""

from __future__ import annotations

import enum
from typing import Any

from a2a import types


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """One level of `$ref` resolution, enough to read an enum behind a property."""
    if isinstance(node, dict) and "$ref" in node:
        return defs.get(node["$ref"].rsplit("/", 1)[1], node)
    return node


def reference_definition(name: str) -> dict[str, Any] | None:
    """`properties`/`required`, `enum` or `anyOf` of an official shape; None if it has none."""
    official = getattr(types, name, None)
    if isinstance(official, type) and issubclass(official, enum.Enum):
        return {"enum": [member.value for member in official]}
    if not hasattr(official, "model_json_schema"):
        return None
    schema = official.model_json_schema(by_alias=True)
    if "anyOf" in schema:
        return {"anyOf": schema["anyOf"]}
    if "properties" not in schema:
        return None
    defs = schema.get("$defs", {})
    properties = {key: _inline(value, defs) for key, value in schema["properties"].items()}
    required = set(schema.get("required", []))
    # The SDK gives these a default value, so it does not list them as required; the
    # protocol's own schema does.
    required |= {key for key in ("kind", "protocolVersion") if key in properties}
    if name.endswith("SecurityScheme") and "type" in properties:
        required.add("type")
    return {"properties": properties, "required": sorted(required)}


class ReferenceDefinitions(dict[str, Any]):
    """The official shapes by name, read from the SDK on demand."""

    def __missing__(self, name: str) -> dict[str, Any]:
        found = reference_definition(name)
        if found is None:
            raise KeyError(name)
        return found

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        found = reference_definition(name)
        return default if found is None else found
