"""Routes for the operations off the JSON-RPC hot path (cards, admin), taken from the spec.

Each operation of spec/openapi.yaml (the generated `OPERATIONS`) is served by the endpoint
its operationId names; a path that matches no operation answers 404, a known path with
another method 405 with `Allow`, both as small JSON documents. A path parameter matches any
one non-empty segment (a `%0A` in it included), so every request to an operation's path
reaches the operation, which answers what the spec documents for a bad value.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import parse_qs

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from synthorg.cards.publisher import socket_base_url
from synthorg.generated.constants import ADMIN_ERROR_METHOD_NOT_ALLOWED, Operation
from synthorg.http.responses import JSON, admin_error, send_bytes, send_not_found
from synthorg.tls.context import client_certificate

_PARAM = re.compile(r"\{([^/{}]+)\}")
MAX_QUERY_FIELDS = 32


@dataclass(frozen=True)
class HttpCall:
    """One request as a card or admin operation sees it (`handlers.context.HttpRequest`)."""

    scope: Scope
    path_params: Mapping[str, str]
    body: bytes = b""

    @property
    def client(self) -> str | None:
        client: Any = self.scope.get("client")
        return str(client[0]) if client else None

    @cached_property
    def local_base_url(self) -> str:
        return socket_base_url(self.scope)

    @property
    def client_certificate(self) -> bytes | None:
        return client_certificate(self.scope)  # from the TLS connection, never a header

    @cached_property
    def query(self) -> Mapping[str, list[str]]:
        raw = self.scope.get("query_string", b"").decode("latin-1")
        return parse_qs(raw, keep_blank_values=True, max_num_fields=MAX_QUERY_FIELDS)

    def header_values(self, name: str) -> list[str]:
        wanted = name.lower().encode("latin-1")
        return [
            value.decode("latin-1")
            for key, value in self.scope.get("headers", ())
            if key.lower() == wanted
        ]


Endpoint = Callable[[Scope, Mapping[str, str]], Awaitable[Response]]


@dataclass(frozen=True)
class _Route:
    pattern: re.Pattern[str]
    methods: dict[str, Endpoint]

    @property
    def allow(self) -> bytes:
        return ", ".join(sorted(self.methods)).encode("ascii")


def compile_template(template: str) -> re.Pattern[str]:
    """`/a/{name}/b` -> a pattern whose group `name` is one non-empty path segment."""
    parts = re.split(r"(\{[^/{}]+\})", template)
    return re.compile("".join(
        f"(?P<{match.group(1)}>[^/]+)" if (match := _PARAM.fullmatch(part)) else re.escape(part)
        for part in parts
    ))


class Router:
    def __init__(self, operations: Mapping[Operation, Endpoint]) -> None:
        routes: dict[str, _Route] = {}
        for operation, endpoint in operations.items():
            route = routes.setdefault(
                operation.path, _Route(compile_template(operation.path), {})
            )
            route.methods[operation.method] = endpoint
        self._routes = tuple(routes.values())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        for route in self._routes:
            match = route.pattern.fullmatch(path)
            if match is None:
                continue
            endpoint = route.methods.get(scope["method"])
            if endpoint is None:
                await send_bytes(
                    send, 405, admin_error(ADMIN_ERROR_METHOD_NOT_ALLOWED, "Method not allowed"),
                    [JSON, (b"allow", route.allow)],
                )
                return
            response = await endpoint(scope, match.groupdict())
            await response(scope, receive, send)
            return
        await send_not_found(send)
