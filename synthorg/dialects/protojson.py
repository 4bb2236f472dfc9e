"""ProtoJSON input for the 1.0 dialect: a member may be sent by its proto field name
(`context_id`) as well as its JSON name (`contextId`), as ProtoJSON parsers accept both.

The names come from the spec (`V1_PROTO_NAMES`, generated); the values of free-form members
(`metadata`, a data part's `data`) are the caller's own and keep their spelling. Answers are
always written with the JSON names.
"""

from __future__ import annotations

from typing import Any

from synthorg.generated.constants import V1_FREE_FORM_MEMBERS, V1_PROTO_NAMES

Issue = dict[str, Any]


def json_names(params: dict[str, Any]) -> tuple[dict[str, Any], list[Issue]]:
    """The params with every proto field name replaced by its JSON name, and an issue for
    each member sent under both of its names (which one was meant is not knowable)."""
    issues: list[Issue] = []
    return _object(params, [], issues), issues


def _value(value: Any, loc: list[int | str], issues: list[Issue]) -> Any:
    if isinstance(value, dict):
        return _object(value, loc, issues)
    if isinstance(value, list):
        return [_value(item, [*loc, index], issues) for index, item in enumerate(value)]
    return value


def _object(members: dict[str, Any], loc: list[int | str], issues: list[Issue]) -> Any:
    out: dict[str, Any] = {}
    for name, value in members.items():
        json_name = V1_PROTO_NAMES.get(name, name)
        if json_name != name and json_name in members:
            issues.append({
                "loc": [*loc, json_name],
                "msg": f"{json_name} is also sent as {name}: send one of the two names",
                "type": "duplicate_member",
            })
            continue
        if json_name in V1_FREE_FORM_MEMBERS:
            out[json_name] = value
        else:
            out[json_name] = _value(value, [*loc, json_name], issues)
    return out
