"""Reading an OpenAPI document: local `$ref` resolution (with `allOf` merged) and what
a schema says of its types, values and members."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_MAX_REF_CHAIN = 32
_MAX_SHOWN_VALUES = 6


class Unresolvable(Exception):
    def __init__(self, ref: str) -> None:
        super().__init__(ref)
        self.ref = ref


class Document:
    """A parsed OpenAPI document and local `$ref` resolution within it."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw

    def pointer(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise Unresolvable(ref)
        node: Any = self.raw
        for token in ref[1:].split("/")[1:] if ref != "#" else []:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise Unresolvable(ref)
        return node

    def resolve(self, node: Any) -> tuple[Any, str | None]:
        """(the schema with `$ref`s followed and `allOf` merged, the last ref followed)."""
        last: str | None = None
        for _ in range(_MAX_REF_CHAIN):
            if not isinstance(node, Mapping) or not isinstance(node.get("$ref"), str):
                break
            ref = node["$ref"]
            target = self.pointer(ref)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            node = {**target, **siblings} if siblings and isinstance(target, Mapping) else target
            last = ref
        else:
            raise Unresolvable(str(node.get("$ref")))
        if isinstance(node, Mapping) and isinstance(node.get("allOf"), list):
            node = self._merge_all_of(node)
        return node, last

    def _merge_all_of(self, node: Mapping[str, Any]) -> dict[str, Any]:
        merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
        for part in node["allOf"]:
            resolved, _ = self.resolve(part)
            if not isinstance(resolved, Mapping):
                continue
            for key, value in resolved.items():
                if key == "properties" and isinstance(value, Mapping):
                    merged["properties"] = {**merged.get("properties", {}), **value}
                elif key == "required" and isinstance(value, list):
                    merged["required"] = [*merged.get("required", []), *value]
                elif key == "additionalProperties" and value is False:
                    merged[key] = False
                else:
                    merged.setdefault(key, value)
        return merged


def union_variants(schema: Mapping[str, Any]) -> list[Any] | None:
    for key in ("oneOf", "anyOf"):
        value = schema.get(key)
        if isinstance(value, list) and value:
            return value
    return None


def ref_name(ref: str | None) -> str | None:
    return ref.rsplit("/", 1)[-1] if ref else None


def schema_types(schema: Mapping[str, Any]) -> set[str] | None:
    declared = schema.get("type")
    if isinstance(declared, str):
        found = {declared}
    elif isinstance(declared, list):
        found = {t for t in declared if isinstance(t, str)}
    else:
        values = allowed_values(schema)
        if values is not None:
            found = {_json_type(json.loads(v)) for v in values}
        elif "properties" in schema or "required" in schema:
            found = {"object"}
        elif "items" in schema or "prefixItems" in schema:
            found = {"array"}
        else:
            return None
    if schema.get("nullable") is True:  # OpenAPI 3.0 style
        found.add("null")
    return found


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def allowed_values(schema: Mapping[str, Any]) -> set[str] | None:
    """The allowed values (as canonical JSON), or None when not limited to a list."""
    if "const" in schema:
        return {_canon(schema["const"])}
    enum = schema.get("enum")
    if isinstance(enum, list):
        return {_canon(value) for value in enum}
    return None


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def shown_values(values: set[str]) -> str:
    ordered = sorted(values)
    text = ", ".join(ordered[:_MAX_SHOWN_VALUES])
    return text + (f", ... ({len(ordered)} in all)" if len(ordered) > _MAX_SHOWN_VALUES else "")


def unfit_types(sent: set[str], accepted: set[str]) -> set[str]:
    """The sent types the receiver does not accept (an integer is also a number)."""
    return {t for t in sent if t not in accepted and not (t == "integer" and "number" in accepted)}


def is_closed(schema: Mapping[str, Any]) -> bool:
    return (
        schema.get("additionalProperties") is False or schema.get("unevaluatedProperties") is False
    )


def properties_of(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    props = schema.get("properties")
    return props if isinstance(props, Mapping) else {}


def required_of(schema: Mapping[str, Any]) -> set[str]:
    req = schema.get("required")
    return {r for r in req if isinstance(r, str)} if isinstance(req, list) else set()


def const_of(schema: Any, document: Document, prop: str) -> str | None:
    """The canonical const (or one-value enum) of `prop` in an object schema, if any."""
    try:
        resolved, _ = document.resolve(schema)
        if not isinstance(resolved, Mapping):
            return None
        member, _ = document.resolve(properties_of(resolved).get(prop))
    except Unresolvable:
        return None
    if not isinstance(member, Mapping):
        return None
    values = allowed_values(member)
    return next(iter(values)) if values is not None and len(values) == 1 else None

