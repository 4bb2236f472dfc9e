"""The admin API's routes, read from the spec: which paths exist, their methods, and which
methods take a JSON body. The admin middleware answers 404 and 405 from this table itself, so
no request under the admin prefix reaches the app unless the spec defines it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from synthorg.contract.spec import bundled_openapi

PREFIX = "/api/v1/admin"
_HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
_PARAM = re.compile(r"\{[^/{}]+\}")


@dataclass(frozen=True)
class AdminRoute:
    template: str  # the spec's path, e.g. /api/v1/admin/peers/{name}
    pattern: re.Pattern[str]
    methods: frozenset[str]  # upper case
    body_methods: frozenset[str]  # those with a requestBody

    @property
    def allow(self) -> str:
        return ", ".join(sorted(self.methods))


def is_admin_path(path: object) -> bool:
    return isinstance(path, str) and (path == PREFIX or path.startswith(PREFIX + "/"))


@cache
def admin_routes() -> tuple[AdminRoute, ...]:
    routes = []
    for template, item in bundled_openapi()["paths"].items():
        if not is_admin_path(template):
            continue
        methods = {m.upper() for m in _HTTP_METHODS if m in item}
        body = {m.upper() for m in _HTTP_METHODS if "requestBody" in item.get(m, {})}
        regex = "".join(
            "[^/]+" if _PARAM.fullmatch(part) else re.escape(part)
            for part in re.split(r"(\{[^/{}]+\})", template)
        )
        routes.append(AdminRoute(template, re.compile(regex), frozenset(methods), frozenset(body)))
    return tuple(routes)


def match_route(path: str) -> AdminRoute | None:
    for route in admin_routes():
        if route.pattern.fullmatch(path):
            return route
    return None
