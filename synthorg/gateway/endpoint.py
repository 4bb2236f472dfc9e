"""The JSON-RPC endpoint, `POST /api/v1/a2a/` and `POST /api/v1/a2a/agents/{agent_id}/`, as
one plain ASGI app. Read top to bottom, it is the request pipeline:

| step | check                                                   | refusal               |
|------|---------------------------------------------------------|-----------------------|
| 0    | the gateway is enabled                                  | 404, as if absent     |
| 1    | the method is POST                                      | 405, Allow: POST      |
| 2    | a declared Content-Length is well formed and in bounds  | 400 / 413, -32600     |
| 3-5  | the three gates, on headers alone (`gates.py`)          | 401 / 403             |
|      | the peer's rate limit (`ratelimit.py`), by its record   | 429, -32005           |
|      | an agent endpoint's id is well formed                   | 404, -32012           |
| 6    | Content-Type is application/json                        | 415, -32600 / -32005  |
| 7    | the body streams in under the same ceiling              | 413, -32600           |
|      | an agent endpoint's id names an agent of this node      | 404, -32012           |
| 8-12 | parse, envelope, method, params, handler (`pipeline.py`)| 200 / 500             |

Refusals up to step 7 carry `id: null`. Each answers the caller in its own dialect, by its
`A2A-Version` header (the body is not read): to `1.0`, `error.data` is 1.0's array of details
(`dialects/errors.py`), and step 6 answers -32005 (A2A 1.0's ContentTypeNotSupported); to any
other, 0.3's shape, and -32600 at step 6. Nothing of the body is read before the caller is
admitted, so an unauthenticated caller never reaches the JSON parser.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import NamedTuple

from starlette.types import Receive, Scope, Send

from synthorg import jsonrpc
from synthorg.dialects.errors import error_details
from synthorg.gateway import pipeline
from synthorg.gateway.admission import AdmissionWatch
from synthorg.gateway.context import Services
from synthorg.gateway.dialect import speaks_v1
from synthorg.gateway.gates import Admitted, PeerGate
from synthorg.gateway.ratelimit import PeerRateLimiter, retry_after
from synthorg.gateway.sse import EventStream
from synthorg.generated.constants import (
    A2A_VERSION_HEADER,
    GATEWAY_RPC,
    INVALID_REQUEST,
    LAST_EVENT_ID_HEADER,
    RATE_LIMITED,
    UNKNOWN_AGENT,
    V1_CONTENT_TYPE_NOT_SUPPORTED,
    RpcErrorSpec,
)
from synthorg.generated.constants import INTERNAL_ERROR as INTERNAL_ERROR_SPEC
from synthorg.http.body import BodyTooLarge, ClientDisconnected, read_body
from synthorg.http.headers import content_length, header_map, is_json
from synthorg.http.responses import CLOSE, JSON, send_bytes, send_not_found
from synthorg.names import is_agent_id
from synthorg.observability.access import note_admitted, note_refusal
from synthorg.observability.events.a2a import (
    INBOUND_AUTH_FAILED,
    INBOUND_REJECTED,
    INTERNAL_ERROR,
)
from synthorg.observability.log import emit
from synthorg.tls.context import client_certificate

RPC_PATH = GATEWAY_RPC.path  # "/api/v1/a2a/"
RPC_PATHS = frozenset({RPC_PATH, RPC_PATH.rstrip("/")})
AGENT_PATH_PREFIX = f"{RPC_PATH}agents/"
LAST_EVENT_ID = LAST_EVENT_ID_HEADER.lower()  # header_map keys are lowercase
A2A_VERSION = A2A_VERSION_HEADER.lower()
# One non-empty segment, optionally followed by "/".
_AGENT_PATH = re.compile(re.escape(AGENT_PATH_PREFIX) + r"([^/]+)/?")
_LOGGABLE = re.compile(r"[^A-Za-z0-9._-]")
_MAX_LOGGED = 64
_ALLOW_POST = [JSON, (b"allow", b"POST")]


class RpcTarget(NamedTuple):
    agent: str | None  # the raw path segment on an agent's endpoint; checked after the gates
    log_path: str  # the path as logged: never an ill-formed (caller-chosen) segment


def rpc_target(path: str) -> RpcTarget | None:
    """The JSON-RPC endpoint `path` names, or None when it is not one."""
    if path in RPC_PATHS:
        return RpcTarget(None, path)
    match = _AGENT_PATH.fullmatch(path)
    if match is None:
        return None
    agent = match.group(1)
    if not is_agent_id(agent):
        return RpcTarget(agent, f"{AGENT_PATH_PREFIX}<invalid>/")
    return RpcTarget(agent, f"{AGENT_PATH_PREFIX}{agent}/")


@dataclass(frozen=True)
class GatewayConfig:
    """What the endpoint needs, fixed for the life of the process."""

    enabled: bool
    max_request_body_bytes: int
    gate: PeerGate
    agent_ids: frozenset[str]
    services: Services
    # Lets the store read its change counters once, and refresh what they invalidate.
    request_started: Callable[[], Awaitable[None]]
    limiter: PeerRateLimiter | None = None  # None: no per-peer rate limits
    # Ends open streams whose caller the gates no longer admit; None: streams are not watched
    admission: AdmissionWatch | None = None


class Gateway:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = rpc_target(scope["path"])
        config = self.config
        if target is None or not config.enabled:  # step 0: the routes are absent
            await send_not_found(send)
            return
        path = target.log_path
        headers = header_map(scope["headers"])
        v1 = speaks_v1(headers.get(A2A_VERSION))  # the dialect every refusal answers in
        if scope["method"] != "POST":  # step 1
            _rejected("method_not_allowed", 405, path, method=_clip(str(scope["method"])))
            await _refuse(send, 405, INVALID_REQUEST, "Method not allowed; use POST", _ALLOW_POST,
                          v1=v1)
            return
        limit = config.max_request_body_bytes
        declared = headers.get("content-length")  # step 2
        if declared is not None:
            length = content_length(declared)
            if length is None:
                _rejected("invalid_content_length", 400, path)
                await _refuse(send, 400, INVALID_REQUEST, "Invalid Content-Length header", v1=v1)
                return
            if length > limit:
                _rejected("body_too_large", 413, path, declared=length, limit=limit)
                await _too_large(send, limit, v1)
                return
        try:  # the catalog and settings are read at most once from here
            await config.request_started()
        except Exception as exc:  # the store is unreachable: nothing can be decided
            emit(INTERNAL_ERROR, level="error", path=path, error=type(exc).__name__,
                 reason="store_unavailable")
            await _refuse(send, 500, INTERNAL_ERROR_SPEC, v1=v1)  # no detail, as for any fault
            return
        client_cert = client_certificate(scope)  # from the TLS connection, never a header
        result = config.gate.check(headers, client_cert)  # steps 3-5
        if not isinstance(result, Admitted):
            note_refusal(result.reason, result.peer)
            emit(
                INBOUND_AUTH_FAILED,
                level="warning",
                path=path,
                reason=result.reason,
                status=result.status,
                # Canonical name or null: an invalid header may hold anything (even a
                # misplaced secret), so none of it is ever logged.
                peer_name=result.peer,
                **({"detail": result.detail} if result.detail else {}),
            )
            await _refuse(send, result.status, result.error, result.message, v1=v1)
            return
        peer, agent = result.peer, target.agent
        note_admitted(peer)
        if config.limiter is not None:  # by the record the gates read: no second lookup
            own = result.rate_limit
            wait = config.limiter.admit(peer, own)
            if wait is None:  # this process's lease is spent: ask the shared bucket
                wait = await config.limiter.take(peer, own)
            if wait:
                await _rate_limited(send, path, peer, wait, v1)
                return
        if agent is not None and not is_agent_id(agent):
            await _unknown_agent(send, path, peer, v1)
            return
        if not is_json(headers.get("content-type")):  # step 6
            _rejected("unsupported_media_type", 415, path, peer_name=peer)
            await _wrong_content_type(send, v1)
            return
        try:  # step 7
            body = await read_body(receive, limit)
        except ClientDisconnected:
            return
        except BodyTooLarge:
            _rejected("body_too_large_streamed", 413, path, peer_name=peer, limit=limit)
            await _too_large(send, limit, v1)
            return
        if agent is not None and agent not in config.agent_ids:
            await _unknown_agent(send, path, peer, v1)
            return
        reply = await pipeline.answer(  # 8-12, in the dialect A2A-Version names
            body, peer, agent, config.services, headers.get(LAST_EVENT_ID),
            version=headers.get(A2A_VERSION), scope=scope,
        )
        if isinstance(reply, EventStream):  # message/stream, tasks/resubscribe
            watch = config.admission
            revoked = watch.watch(headers, client_cert) if watch is not None else None
            try:
                await reply.respond(send, receive, revoked)
            finally:
                if watch is not None and revoked is not None:
                    watch.release(revoked)
            return
        await send_bytes(send, *reply)


async def _refuse(
    send: Send,
    status: int,
    error: RpcErrorSpec,
    message: str | None = None,
    headers: list[tuple[bytes, bytes]] | None = None,
    *,
    v1: bool = False,
) -> None:
    data = error_details(error, None) if v1 else None
    await send_bytes(send, status, jsonrpc.error(error, message, None, data), headers or [JSON])


async def _wrong_content_type(send: Send, v1: bool) -> None:
    # A 1.0 caller (by its header: the body is not read) gets 1.0's own code for it.
    if v1:
        await _refuse(send, 415, V1_CONTENT_TYPE_NOT_SUPPORTED, v1=True)
        return
    await _refuse(send, 415, INVALID_REQUEST, "Content-Type must be application/json")


async def _too_large(send: Send, limit: int, v1: bool) -> None:
    # The rest of the body is never read, so the connection cannot be reused.
    await _refuse(send, 413, INVALID_REQUEST, f"Request body exceeds {limit} bytes",
                  [JSON, CLOSE], v1=v1)


async def _rate_limited(send: Send, path: str, peer: str, wait: float, v1: bool) -> None:
    seconds = retry_after(wait)
    _rejected("rate_limited", 429, path, peer_name=peer, retry_after=seconds)
    # The body is not read (refused traffic costs little), so the connection is not reused.
    await _refuse(send, 429, RATE_LIMITED, RATE_LIMITED.message,
                  [JSON, CLOSE, (b"retry-after", str(seconds).encode("ascii"))], v1=v1)


async def _unknown_agent(send: Send, path: str, peer: str, v1: bool) -> None:
    _rejected("unknown_agent", 404, path, peer_name=peer)
    await _refuse(send, 404, UNKNOWN_AGENT, UNKNOWN_AGENT.message, v1=v1)


def _rejected(reason: str, status: int, path: str, **fields: object) -> None:
    note_refusal(reason)
    emit(INBOUND_REJECTED, level="warning", reason=reason, status=status, path=path, **fields)


def _clip(value: str) -> str:
    return _LOGGABLE.sub("?", value[:_MAX_LOGGED])
