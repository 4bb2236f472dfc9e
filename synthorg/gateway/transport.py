"""Pure-ASGI gateway middleware: DESIGN §4 steps 0-7 for the JSON-RPC endpoint.

Steps 0-7 run in order on ``POST /api/v1/a2a`` and ``/api/v1/a2a/``, and on each agent's
own endpoint ``/api/v1/a2a/agents/{agent_id}`` (with or without the trailing slash); every
refusal is written here as a JSON-RPC error envelope with ``id: null``. The gates (3-5) look at
headers only, so no body byte is read before the caller is admitted. An admitted
request reaches the app with the path normalised to the slash form (no 307 redirect),
``scope["synthorg.peer"]`` set to the canonical peer name and ``scope["synthorg.body"]``
holding the buffered body, which is also replayed through ``receive``. On an agent's endpoint
``scope["synthorg.agent"]`` holds the agent id; an id that is not well formed is refused with
404 (-32012) right after the gates, since it cannot name an agent (and could not be put back
into an ASCII path). Whether a well-formed id names an agent is the handler's business.

Step 0 (gateway disabled): the routes must look absent, so rather than inventing a 404
body the request is handed to the app under the path ``/__a2a_disabled__``, which no
route matches; the app answers with its own, ordinary 404.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple, Protocol

from starlette.types import ASGIApp, Receive, Scope, Send

from synthorg.cards.agent_ids import is_agent_id
from synthorg.gateway.auth import Admitted, PeerGate
from synthorg.gateway.errors import INTERNAL_ERROR, INVALID_REQUEST, UNKNOWN_AGENT, error_body
from synthorg.http.body import BodyTooLarge, ClientDisconnected, read_body, replay_body
from synthorg.observability.events.a2a import INBOUND_AUTH_FAILED, INBOUND_REJECTED
from synthorg.observability.log import emit

RPC_PATHS = frozenset({"/api/v1/a2a", "/api/v1/a2a/"})
CANONICAL_PATH = "/api/v1/a2a/"
AGENT_PATH_PREFIX = "/api/v1/a2a/agents/"
DISABLED_PATH = "/__a2a_disabled__"
SCOPE_PEER = "synthorg.peer"
SCOPE_BODY = "synthorg.body"
SCOPE_AGENT = "synthorg.agent"

# One non-empty segment, optionally followed by "/": at least everything the app's
# `/api/v1/a2a/agents/{agent_id}/` route could match, so no request reaches it ungated.
_AGENT_PATH = re.compile(r"/api/v1/a2a/agents/([^/]+)/?")
_DIGITS = re.compile(r"[0-9]+")
_LOGGABLE = re.compile(r"[^A-Za-z0-9._-]")
_MAX_LOGGED = 64
_MAX_LENGTH_DIGITS = 18  # int() refuses strings past ~4300 digits; 10**18 bytes is plenty


class GatewaySettings(Protocol):
    """The live configuration the middleware reads once per request."""

    @property
    def enabled(self) -> bool: ...

    @property
    def max_request_body_bytes(self) -> int: ...

    @property
    def gate(self) -> PeerGate: ...


class GatewayMiddleware:
    def __init__(self, app: ASGIApp, *, settings_provider: Callable[[], GatewaySettings]) -> None:
        self.app = app
        self.settings_provider = settings_provider

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = rpc_target(scope.get("path")) if scope["type"] == "http" else None
        if target is None:
            await self.app(scope, receive, send)
            return
        try:
            settings = self.settings_provider()
            enabled, limit, gate = settings.enabled, settings.max_request_body_bytes, settings.gate
        except Exception:
            emit(INBOUND_REJECTED, level="error", reason="settings_unavailable", status=500)
            await _refuse(send, 500, INTERNAL_ERROR, "Internal error")
            return
        if not enabled:  # step 0
            await self.app(_with_path(scope, DISABLED_PATH), receive, send)
            return
        await self._gateway(limit, gate, target, scope, receive, send)

    async def _gateway(
        self,
        limit: int,
        gate: PeerGate,
        target: RpcTarget,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        path = target.log_path
        method = scope.get("method", "")
        if method != "POST":  # step 1
            _rejected("method_not_allowed", 405, path, method=_clip(str(method)))
            await _refuse(
                send, 405, INVALID_REQUEST, "Method not allowed; use POST", [(b"allow", b"POST")]
            )
            return
        headers = _headers(scope)
        declared = headers.get("content-length")  # step 2
        if declared is not None:
            length = _content_length(declared)
            if length is None:
                _rejected("invalid_content_length", 400, path)
                await _refuse(send, 400, INVALID_REQUEST, "Invalid Content-Length header")
                return
            if length > limit:
                _rejected("body_too_large", 413, path, declared=length, limit=limit)
                await _too_large(send, limit)
                return
        result = gate.check(headers)  # steps 3-5
        if not isinstance(result, Admitted):
            emit(
                INBOUND_AUTH_FAILED,
                level="warning",
                path=path,
                reason=result.reason,
                status=result.status,
                # Canonical name or null: an invalid header may hold anything (even a
                # misplaced secret), so none of it is ever logged.
                peer_name=result.peer,
            )
            await _refuse(send, result.status, result.code, result.message)
            return
        peer = result.peer
        agent = target.agent
        if agent is not None and not is_agent_id(agent):
            _rejected("unknown_agent", 404, path, peer_name=peer)
            await _refuse(send, 404, UNKNOWN_AGENT, "Unknown agent")
            return
        if not _is_json(headers.get("content-type")):  # step 6
            _rejected("unsupported_media_type", 415, path, peer_name=peer)
            await _refuse(send, 415, INVALID_REQUEST, "Content-Type must be application/json")
            return
        try:  # step 7
            body = await read_body(receive, limit)
        except ClientDisconnected:
            return
        except BodyTooLarge:
            _rejected("body_too_large_streamed", 413, path, peer_name=peer, limit=limit)
            await _too_large(send, limit)
            return
        inner = _with_path(scope, target.canonical_path)
        inner[SCOPE_PEER] = peer
        inner[SCOPE_BODY] = body
        if agent is not None:
            inner[SCOPE_AGENT] = agent
        await self.app(inner, replay_body(body, receive), send)


class RpcTarget(NamedTuple):
    canonical_path: str
    agent: str | None  # the raw path segment; validated after the gates
    log_path: str  # the path as logged: never an ill-formed (caller-chosen) segment


def rpc_target(path: object) -> RpcTarget | None:
    """The JSON-RPC endpoint `path` names, or None when it is not one."""
    if not isinstance(path, str):
        return None
    if path in RPC_PATHS:
        return RpcTarget(CANONICAL_PATH, None, path)
    match = _AGENT_PATH.fullmatch(path)
    if match is None:
        return None
    agent = match.group(1)
    if not is_agent_id(agent):
        # Refused right after the gates; the canonical path is never used for it.
        return RpcTarget(CANONICAL_PATH, agent, f"{AGENT_PATH_PREFIX}<invalid>/")
    canonical = f"{AGENT_PATH_PREFIX}{agent}/"
    return RpcTarget(canonical, agent, canonical)


def _with_path(scope: Scope, path: str) -> Scope:
    inner = dict(scope)
    inner["path"] = path
    inner["raw_path"] = path.encode("ascii")
    return inner


def _headers(scope: Scope) -> dict[str, str]:
    """Lower-cased names; repeated headers joined with ", " so duplicates cannot
    smuggle a second value past a gate (a joined value simply fails to match)."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").lower()
        # UTF-8 with surrogateescape: never fails, and the gate can recover the bytes.
        value = raw_value.decode("utf-8", "surrogateescape")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


def _content_length(value: str) -> int | None:
    """Digits only (``int()`` would accept "+5", "1_0" and " 5 "); absurdly long values
    are capped rather than parsed, since they are over any limit anyway."""
    value = value.strip()
    if not _DIGITS.fullmatch(value):
        return None
    return int(value) if len(value) <= _MAX_LENGTH_DIGITS else 10**_MAX_LENGTH_DIGITS


def _is_json(content_type: str | None) -> bool:
    if content_type is None:
        return False
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


async def _refuse(
    send: Send,
    status: int,
    code: int,
    message: str,
    extra_headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    body = error_body(code, message)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
        *(extra_headers or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _too_large(send: Send, limit: int) -> None:
    # The rest of the body is never read, so the connection cannot be reused.
    await _refuse(
        send,
        413,
        INVALID_REQUEST,
        f"Request body exceeds {limit} bytes",
        [(b"connection", b"close")],
    )


def _rejected(reason: str, status: int, path: str, **fields: object) -> None:
    emit(INBOUND_REJECTED, level="warning", reason=reason, status=status, path=path, **fields)


def _clip(value: str) -> str:
    return _LOGGABLE.sub("?", value[:_MAX_LOGGED])
