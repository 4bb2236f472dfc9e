"""The admin gate, pure ASGI: everything under `/api/v1/admin` passes here first.

In order, each refusal written here as an AdminError (spec/schemas/admin.json):

1. `Authorization: Bearer <admin token>`, compared in constant time on headers alone, before
   any body byte is read; anything else (no header, another scheme, a repeated header, a peer's
   `X-API-Key`, a wrong token, an internal fault) is 401. Unknown paths are 401 too until the
   caller is authenticated: nothing about the API is told to a stranger.
2. The path is one of the spec's admin paths (404) and the method one of its methods (405 with
   `Allow`).
3. For the methods that take a body (PUT, POST): a well-formed `Content-Length` (400) of at most
   `MAX_BODY_BYTES` (413), `Content-Type: application/json` (415), and the streamed body under
   the same ceiling (413). The body is buffered and handed to the app in
   `scope["synthorg.admin.body"]` (and replayed through `receive`). Methods without a body
   never have theirs read.

An admitted request reaches the app with `scope["synthorg.admin"]` set to True; the admin
handlers refuse any request without it, so a route that somehow bypassed this middleware fails
closed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from synthorg.admin.token import AdminToken, bearer_credential
from synthorg.generated.constants import (
    ADMIN_ERROR_INVALID_BODY,
    ADMIN_ERROR_METHOD_NOT_ALLOWED,
    ADMIN_ERROR_NOT_FOUND,
    ADMIN_ERROR_TOO_LARGE,
    ADMIN_ERROR_UNAUTHORIZED,
    ADMIN_ERROR_UNSUPPORTED_MEDIA_TYPE,
    MEDIA_TYPE_APPLICATION_JSON,
    OPERATIONS,
)
from synthorg.http.body import BodyTooLarge, ClientDisconnected, read_body, replay_body
from synthorg.http.responses import CLOSE, JSON, admin_error, send_bytes
from synthorg.observability.events.admin import AUTH_FAILED, REQUEST_REJECTED
from synthorg.observability.log import emit

PREFIX = "/api/v1/admin"
MAX_BODY_BYTES = 64 * 1024
SCOPE_ADMIN = "synthorg.admin"
SCOPE_ADMIN_BODY = "synthorg.admin.body"
WWW_AUTHENTICATE = b'Bearer realm="synthorg-admin"'
NO_STORE = (b"cache-control", b"no-store")
_DIGITS = re.compile(rb"[0-9]{1,18}")
_PARAM = re.compile(r"\{[^/{}]+\}")


@dataclass(frozen=True)
class AdminRoute:
    template: str  # the spec's path, e.g. /api/v1/admin/peers/{name}
    pattern: re.Pattern[str]
    methods: frozenset[str]
    body_methods: frozenset[str]  # those with a request body

    @property
    def allow(self) -> str:
        return ", ".join(sorted(self.methods))


def is_admin_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def _admin_routes() -> tuple[AdminRoute, ...]:
    templates: dict[str, list[tuple[str, bool]]] = {}
    for operation in OPERATIONS:
        if is_admin_path(operation.path):
            templates.setdefault(operation.path, []).append((operation.method, operation.has_body))
    return tuple(
        AdminRoute(
            template,
            re.compile("".join(
                "[^/]+" if _PARAM.fullmatch(part) else re.escape(part)
                for part in re.split(r"(\{[^/{}]+\})", template)
            )),
            frozenset(method for method, _ in methods),
            frozenset(method for method, body in methods if body),
        )
        for template, methods in templates.items()
    )


ADMIN_ROUTES = _admin_routes()


def match_route(path: str) -> AdminRoute | None:
    for route in ADMIN_ROUTES:
        if route.pattern.fullmatch(path):
            return route
    return None


class AdminGate:
    def __init__(self, app: ASGIApp, *, token_provider: Callable[[], AdminToken]) -> None:
        self.app = app
        self.token_provider = token_provider

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_admin_path(scope["path"]):
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        client = _client(scope)
        reason = _auth_failure(self.token_provider, scope)
        if reason is not None:
            emit(AUTH_FAILED, level="warning", reason=reason, status=401, client=client,
                 path=_loggable(path))
            await _refuse(send, 401, ADMIN_ERROR_UNAUTHORIZED, "Admin token required",
                          [(b"www-authenticate", WWW_AUTHENTICATE)])
            return
        route = match_route(path)
        if route is None:
            _rejected("not_found", 404, path, client)
            await _refuse(send, 404, ADMIN_ERROR_NOT_FOUND, "No such admin path")
            return
        method = str(scope.get("method", "")).upper()
        if method not in route.methods:
            _rejected("method_not_allowed", 405, route.template, client)
            await _refuse(send, 405, ADMIN_ERROR_METHOD_NOT_ALLOWED,
                          f"Method not allowed; use {route.allow}",
                          [(b"allow", route.allow.encode("ascii"))])
            return
        inner = dict(scope)
        inner[SCOPE_ADMIN] = True
        if method not in route.body_methods:
            await self.app(inner, receive, send)
            return
        headers = _raw_headers(scope)
        declared = headers.get(b"content-length")
        if declared is not None:
            if not _DIGITS.fullmatch(declared.strip()):
                _rejected("invalid_content_length", 400, route.template, client)
                await _refuse(send, 400, ADMIN_ERROR_INVALID_BODY, "Invalid Content-Length header")
                return
            if int(declared.strip()) > MAX_BODY_BYTES:
                _rejected("body_too_large", 413, route.template, client)
                await _too_large(send)
                return
        if not _is_json(headers.get(b"content-type")):
            _rejected(ADMIN_ERROR_UNSUPPORTED_MEDIA_TYPE, 415, route.template, client)
            await _refuse(send, 415, "unsupported_media_type",
                          "Content-Type must be application/json")
            return
        try:
            body = await read_body(receive, MAX_BODY_BYTES)
        except ClientDisconnected:
            return
        except BodyTooLarge:
            _rejected("body_too_large_streamed", 413, route.template, client)
            await _too_large(send)
            return
        inner[SCOPE_ADMIN_BODY] = body
        await self.app(inner, replay_body(body, receive), send)


def _auth_failure(token_provider: Callable[[], AdminToken], scope: Scope) -> str | None:
    """Why the request is not the operator's, or None. Fails closed on any fault."""
    try:
        values = [v for k, v in scope.get("headers", ()) if k.lower() == b"authorization"]
        if not values:
            return "missing_token"
        if len(values) > 1:
            return "repeated_authorization"
        credential = bearer_credential(values[0])
        if credential is None:
            return "not_bearer"
        if not token_provider().matches(credential):
            return "token_mismatch"
        return None
    except Exception:
        return "auth_error"


_JSON_TYPE = MEDIA_TYPE_APPLICATION_JSON.encode()


def _raw_headers(scope: Scope) -> dict[bytes, bytes]:
    """Lower-cased names; a repeated header's values joined, so it cannot pass as one."""
    out: dict[bytes, bytes] = {}
    for raw_name, value in scope.get("headers", ()):
        name = raw_name.lower()
        out[name] = out[name] + b", " + value if name in out else value
    return out


def _is_json(content_type: bytes | None) -> bool:
    if content_type is None:
        return False
    return content_type.split(b";", 1)[0].strip().lower() == _JSON_TYPE


async def _refuse(send: Send, status: int, error: str, message: str,
                  extra: list[tuple[bytes, bytes]] | None = None) -> None:
    await send_bytes(send, status, admin_error(error, message), [JSON, NO_STORE, *(extra or [])])


async def _too_large(send: Send) -> None:
    # The rest of the body is never read, so the connection cannot be reused.
    await _refuse(send, 413, ADMIN_ERROR_TOO_LARGE, f"Request body exceeds {MAX_BODY_BYTES} bytes",
                  [CLOSE])


def _rejected(reason: str, status: int, path: str, client: str | None) -> None:
    emit(REQUEST_REJECTED, level="warning", reason=reason, status=status,
         path=_loggable(path), client=client)


_UNSAFE = re.compile(r"[^A-Za-z0-9._/{}-]")


def _loggable(path: str) -> str:
    return _UNSAFE.sub("?", path[:128])


def _client(scope: Scope) -> str | None:
    client: Any = scope.get("client")
    if isinstance(client, (list, tuple)) and client:
        return str(client[0])
    return None
