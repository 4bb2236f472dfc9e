"""The 1.0 dialect's ProtoJSON input names: every member of the 1.0 params, spelled as its
proto field name (`contextId` -> `context_id`), and the members whose value is free-form.

A ProtoJSON parser accepts a field by its proto name or by its lowerCamelCase JSON name; the
node answers in the JSON names only. The 1.0 params are walked by member name alone, so a
name must mean the same thing wherever it stands: codegen refuses a name that is free-form in
one object and structured in another.
"""

from __future__ import annotations

import re
from typing import Any

from synthorg.contract.spec import all_definitions, ref_target

_UPPER = re.compile(r"[A-Z]")


class ProtoJsonError(ValueError):
    pass


def proto_name(json_name: str) -> str:
    """`contextId` -> `context_id`: the proto field name whose ProtoJSON name is json_name."""
    return _UPPER.sub(lambda match: "_" + match.group().lower(), json_name)


def _free_form(schema: dict[str, Any], definitions: dict[str, tuple[str, dict[str, Any]]]) -> bool:
    """Whether a member's value is an object of the caller's own members (metadata, data)."""
    if "$ref" in schema:
        return _free_form(definitions[ref_target(schema["$ref"])][1], definitions)
    structured = ("properties", "oneOf", "anyOf", "allOf", "enum", "const", "items")
    if any(key in schema for key in structured):
        return False
    types = schema.get("type")
    return types is None or types == "object" or (isinstance(types, list) and "object" in types)


def members(union: str) -> tuple[dict[str, str], frozenset[str]]:
    """(proto name -> JSON name for each member whose spellings differ, the free-form
    members) of every object reachable from the params union."""
    definitions = all_definitions()
    kinds: dict[str, set[bool]] = {}
    seen: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
            return
        if not isinstance(node, dict):
            return
        if "$ref" in node:
            target = ref_target(node["$ref"])
            if target not in seen:
                seen.add(target)
                walk(definitions[target][1])
        for key, value in node.items():
            if key == "properties":
                for name, schema in value.items():
                    kinds.setdefault(name, set()).add(_free_form(schema, definitions))
                    walk(schema)
            elif isinstance(value, dict | list):
                walk(value)

    walk(definitions[union][1])
    mixed = sorted(name for name, kind in kinds.items() if len(kind) > 1)
    if mixed:
        raise ProtoJsonError(f"{union}: members free-form in one object only: {mixed}")
    names = {proto_name(name): name for name in kinds if proto_name(name) != name}
    clashes = sorted(set(names) & set(kinds))
    if clashes:
        raise ProtoJsonError(f"{union}: proto names that are also JSON names: {clashes}")
    return dict(sorted(names.items())), frozenset(n for n, kind in kinds.items() if True in kind)
