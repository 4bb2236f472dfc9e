"""1.0's `tenant`: a request names the tenant its card's interface declares. A node hosts one
company and its interfaces declare no tenant, so a request may omit `tenant` or send it
empty; any other value names a tenant this node does not serve and is refused (-32602, the
issue at the member), wherever a 1.0 object carries it."""

from __future__ import annotations

from typing import Any

from synthorg.generated.constants import V1_FREE_FORM_MEMBERS

TENANT = "tenant"
Issue = dict[str, Any]


def tenant_issues(params: dict[str, Any]) -> list[Issue]:
    """An issue for each `tenant` in the params that is not empty."""
    issues: list[Issue] = []
    _walk(params, [], issues)
    return issues


def _walk(value: Any, loc: list[int | str], issues: list[Issue]) -> None:
    if isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, [*loc, index], issues)
        return
    if not isinstance(value, dict):
        return
    for name, member in value.items():
        if name == TENANT:
            if member not in (None, ""):
                issues.append({
                    "loc": [*loc, TENANT],
                    "msg": "unknown tenant: this node serves one tenant and declares no "
                           "tenant name; omit tenant or send it empty",
                    "type": "tenant_unknown",
                })
        elif name not in V1_FREE_FORM_MEMBERS:
            _walk(member, [*loc, name], issues)
