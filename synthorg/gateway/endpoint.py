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

import enum
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from starlette.types import Receive, Scope, Send

from synthorg import jsonrpc
from synthorg.dialects.errors import error_details, http_error
from synthorg.gateway import pipeline, rest
from synthorg.gateway.admission import AdmissionWatch
from synthorg.gateway.context import Services
from synthorg.gateway.dialect import speaks_v1
from synthorg.gateway.gates import Admitted, PeerGate
from synthorg.gateway.ratelimit import PeerRateLimiter, retry_after
from synthorg.gateway.sse import EventStream
from synthorg.generated.constants import (
    A2A_VERSION_1_0,
    A2A_VERSION_HEADER,
    GATEWAY_RPC,
    INVALID_REQUEST,
    LAST_EVENT_ID_HEADER,
    METHOD_NOT_FOUND,
    RATE_LIMITED,
    UNKNOWN_AGENT,
    V1_CONTENT_TYPE_NOT_SUPPORTED,
    RpcErrorSpec,
)
from synthorg.generated.constants import INTERNAL_ERROR as INTERNAL_ERROR_SPEC
from synthorg.http.body import BodyTooLarge, ClientDisconnected, read_body
from synthorg.http.headers import content_length, header_map, is_json, is_json_or_a2a
from synthorg.http.responses import CLOSE, JSON, send_bytes, send_not_found
from synthorg.names import is_agent_id
from synthorg.observability.access import note_admitted, note_dialect, note_refusal
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


class Body(enum.Enum):
    """What a route takes as its body."""

    REQUIRED = "required"
    OPTIONAL = "optional"  # may be empty, then without a Content-Type
    NONE = "none"  # not read (GET, DELETE)


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


class Refusals(NamedTuple):
    """How a request's refusals are written: in its binding, and for JSON-RPC its dialect."""

    v1: bool  # A2A 1.0's error.data (and its code for a wrong Content-Type)
    rest: bool = False  # HTTP+JSON: google.rpc.Status, not a JSON-RPC envelope


_RPC_03, _RPC_V1, _REST = Refusals(False), Refusals(True), Refusals(True, rest=True)


class Admission(NamedTuple):
    peer: str
    body: bytes
    client_cert: bytes | None


class Gateway:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        config = self.config
        target = rpc_target(path)
        if target is None and config.enabled:
            found = rest.rest_target(path)
            if found is not None or path.startswith(rest.PREFIX):
                await self._rest(scope, receive, send, found)
                return
        if target is None or not config.enabled:  # step 0: the routes are absent
            await send_not_found(send)
            return
        headers = header_map(scope["headers"])
        # The dialect every refusal answers in.
        way = _RPC_V1 if speaks_v1(headers.get(A2A_VERSION)) else _RPC_03
        if scope["method"] != "POST":  # step 1
            _rejected("method_not_allowed", 405, target.log_path,
                      method=_clip(str(scope["method"])))
            await _refuse(send, 405, INVALID_REQUEST, "Method not allowed; use POST", _ALLOW_POST,
                          way=way)
            return
        admitted = await self._admit(scope, receive, send, headers, target.log_path, way,
                                     target.agent, Body.REQUIRED)
        if admitted is None:
            return
        reply = await pipeline.answer(  # 8-12, in the dialect A2A-Version names
            admitted.body, admitted.peer, target.agent, config.services,
            headers.get(LAST_EVENT_ID), version=headers.get(A2A_VERSION), scope=scope,
        )
        await self._reply(send, receive, reply, headers, admitted)

    async def _rest(
        self, scope: Scope, receive: Receive, send: Send, target: rest.Target | None
    ) -> None:
        """A2A 1.0's HTTP+JSON binding (`rest.py`): the same steps, its own answers."""
        note_dialect(A2A_VERSION_1_0)  # the binding's only dialect, with or without the header
        if target is None:  # no route of the binding: nothing to admit
            await _refuse(send, 404, METHOD_NOT_FOUND, way=_REST)
            return
        agent = target.agent
        # Never the ids the caller put in the path; an agent's only when well formed.
        if agent is None:
            log_path = rest.PREFIX + "..."
        else:
            log_path = f"{AGENT_PATH_PREFIX}{agent if is_agent_id(agent) else '<invalid>'}/rest/..."
        route = target.routes.get(scope["method"])
        if route is None:  # step 1
            _rejected("method_not_allowed", 405, log_path, method=_clip(str(scope["method"])))
            allow = ", ".join(sorted(target.routes)).encode("ascii")
            await _refuse(send, 405, INVALID_REQUEST, "Method not allowed",
                          [JSON, (b"allow", allow)], way=_REST)
            return
        headers = header_map(scope["headers"])
        body = Body.NONE if not route.operation.has_body else (
            Body.OPTIONAL if route.operation in rest.OPTIONAL_BODY else Body.REQUIRED)
        admitted = await self._admit(scope, receive, send, headers, log_path, _REST, agent, body)
        if admitted is None:
            return
        reply = await rest.answer(
            route, target.path_params, scope.get("query_string", b""), admitted.body,
            admitted.peer, agent, self.config.services, headers.get(LAST_EVENT_ID), scope,
            headers.get(A2A_VERSION),
        )
        await self._reply(send, receive, reply, headers, admitted)

    async def _admit(
        self, scope: Scope, receive: Receive, send: Send, headers: Mapping[str, str], path: str,
        way: Refusals, agent: str | None, body: Body,
    ) -> Admission | None:
        """Steps 2-7, shared by both bindings: the admitted peer and its body, or None once
        the refusal is sent."""
        config = self.config
        limit = config.max_request_body_bytes
        declared = headers.get("content-length")  # step 2
        if declared is not None:
            length = content_length(declared)
            if length is None:
                _rejected("invalid_content_length", 400, path)
                await _refuse(send, 400, INVALID_REQUEST, "Invalid Content-Length header",
                              way=way)
                return None
            if length > limit:
                _rejected("body_too_large", 413, path, declared=length, limit=limit)
                await _too_large(send, limit, way)
                return None
        try:  # the catalog and settings are read at most once from here
            await config.request_started()
        except Exception as exc:  # the store is unreachable: nothing can be decided
            emit(INTERNAL_ERROR, level="error", path=path, error=type(exc).__name__,
                 reason="store_unavailable")
            await _refuse(send, 500, INTERNAL_ERROR_SPEC, way=way)  # no detail, as for any fault
            return None
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
            await _refuse(send, result.status, result.error, result.message, way=way)
            return None
        peer = result.peer
        note_admitted(peer)
        if config.limiter is not None:  # by the record the gates read: no second lookup
            own = result.rate_limit
            wait = config.limiter.admit(peer, own)
            if wait is None:  # this process's lease is spent: ask the shared bucket
                wait = await config.limiter.take(peer, own)
            if wait:
                await _rate_limited(send, path, peer, wait, way)
                return None
        if agent is not None and not is_agent_id(agent):
            await _unknown_agent(send, path, peer, way)
            return None
        if body is Body.NONE:  # GET and DELETE: their params are in the path and query
            if agent is not None and agent not in config.agent_ids:
                await _unknown_agent(send, path, peer, way)
                return None
            return Admission(peer, b"", client_cert)
        content_type = headers.get("content-type")
        accepted = is_json_or_a2a if way.rest else is_json
        # step 6: an optional body may come without a Content-Type when it is empty
        untyped = body is Body.OPTIONAL and content_type is None
        if not untyped and not accepted(content_type):
            _rejected("unsupported_media_type", 415, path, peer_name=peer)
            await _wrong_content_type(send, way)
            return None
        try:  # step 7
            data = await read_body(receive, limit)
        except ClientDisconnected:
            return None
        except BodyTooLarge:
            _rejected("body_too_large_streamed", 413, path, peer_name=peer, limit=limit)
            await _too_large(send, limit, way)
            return None
        if untyped and data.strip():
            _rejected("unsupported_media_type", 415, path, peer_name=peer)
            await _wrong_content_type(send, way)
            return None
        if agent is not None and agent not in config.agent_ids:
            await _unknown_agent(send, path, peer, way)
            return None
        return Admission(peer, data, client_cert)

    async def _reply(
        self, send: Send, receive: Receive, reply: tuple[int, bytes] | EventStream,
        headers: Mapping[str, str], admitted: Admission,
    ) -> None:
        if isinstance(reply, EventStream):  # a stream: watched while it lasts
            watch = self.config.admission
            revoked = watch.watch(headers, admitted.client_cert) if watch is not None else None
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
    way: Refusals = _RPC_03,
) -> None:
    if way.rest:
        await send_bytes(send, *http_error(error, message, None, status), headers or [JSON])
        return
    data = error_details(error, None) if way.v1 else None
    await send_bytes(send, status, jsonrpc.error(error, message, None, data), headers or [JSON])


async def _wrong_content_type(send: Send, way: Refusals) -> None:
    # A 1.0 caller (by its header: the body is not read) gets 1.0's own code for it.
    if way.v1:
        await _refuse(send, 415, V1_CONTENT_TYPE_NOT_SUPPORTED, way=way)
        return
    await _refuse(send, 415, INVALID_REQUEST, "Content-Type must be application/json")


async def _too_large(send: Send, limit: int, way: Refusals) -> None:
    # The rest of the body is never read, so the connection cannot be reused.
    await _refuse(send, 413, INVALID_REQUEST, f"Request body exceeds {limit} bytes",
                  [JSON, CLOSE], way=way)


async def _rate_limited(send: Send, path: str, peer: str, wait: float, way: Refusals) -> None:
    seconds = retry_after(wait)
    _rejected("rate_limited", 429, path, peer_name=peer, retry_after=seconds)
    # The body is not read (refused traffic costs little), so the connection is not reused.
    await _refuse(send, 429, RATE_LIMITED, RATE_LIMITED.message,
                  [JSON, CLOSE, (b"retry-after", str(seconds).encode("ascii"))], way=way)


async def _unknown_agent(send: Send, path: str, peer: str, way: Refusals) -> None:
    _rejected("unknown_agent", 404, path, peer_name=peer)
    await _refuse(send, 404, UNKNOWN_AGENT, UNKNOWN_AGENT.message, way=way)


def _rejected(reason: str, status: int, path: str, **fields: object) -> None:
    note_refusal(reason)
    emit(INBOUND_REJECTED, level="warning", reason=reason, status=status, path=path, **fields)


def _clip(value: str) -> str:
    return _LOGGABLE.sub("?", value[:_MAX_LOGGED])
