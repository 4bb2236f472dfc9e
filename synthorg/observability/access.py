"""One access event per HTTP request, and the hooks metrics and traces take from it.

`Observed` wraps the node's HTTP handling: it notes the response's status and bytes as they
are sent and the request body's bytes as they are read, times the request, and when the
response is done emits `a2a.inbound.completed` (method, status, peer, duration, bytes) and
hands the same record to each observer (metrics, traces). The gateway fills in what only it
knows, through `note_peer`, `note_method` and `note_refusal`: a context variable holds the
request's record, so the gateway's functions keep their signatures. A call that is not an HTTP
request (the gRPC binding's) gets its record from `call_started` and ends it with `finished`.

Label values are bounded: a method the spec does not define (in either dialect) is `other`,
a path no operation of the spec matches is `other`, and the peer is a canonical name that
passed gate 1 (the metrics map names outside the allowlist to `other` themselves).
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, Protocol

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from synthorg.generated.constants import (
    A2A_VERSION_0_3,
    A2A_VERSION_HEADER,
    A2A_VERSIONS,
    METHODS,
    METHODS_V1,
    OPERATIONS,
)
from synthorg.observability.events.a2a import INBOUND_COMPLETED
from synthorg.observability.log import emit

OTHER = "other"
DIALECT_HEADER = A2A_VERSION_HEADER.lower().encode()
DIALECTS = A2A_VERSIONS


class RequestRecord:
    """What one request did, as the access event and the observers see it."""

    __slots__ = (
        "bytes_in",
        "bytes_out",
        "dialect",
        "duration",
        "headers",
        "http_method",
        "method",
        "observers",
        "operation",
        "peer",
        "refusal",
        "started",
        "status",
        "trace",
    )

    def __init__(self, operation: str, http_method: str, dialect: str,
                 headers: Sequence[tuple[bytes, bytes]],
                 observers: tuple[Observer, ...] = ()) -> None:
        self.operation = operation  # the spec's operationId, or `other`
        self.http_method = http_method
        self.dialect = dialect  # A2A-Version: "0.3" (absent), "1.0", else `other`; or the route's
        self.peer: str | None = None  # canonical, once gate 1 passed
        self.method: str | None = None  # the JSON-RPC method, once the envelope parsed
        self.refusal: str | None = None  # why the gateway refused it before the handler
        self.status = 0
        self.bytes_in = 0
        self.bytes_out = 0
        self.started = time.perf_counter()
        self.duration = 0.0  # seconds
        self.headers = headers  # the raw request headers, for trace context
        self.observers = observers
        self.trace: Any = None  # the tracer's state for this request, when tracing is on


class Observer(Protocol):
    def started(self, record: RequestRecord) -> None: ...

    def admitted(self, record: RequestRecord) -> None: ...

    def method(self, record: RequestRecord) -> None: ...

    def finished(self, record: RequestRecord) -> None: ...


_current: ContextVar[RequestRecord | None] = ContextVar("synthorg_request", default=None)


def current() -> RequestRecord | None:
    return _current.get()


def note_admitted(peer: str) -> None:
    """The gates admitted `peer` (a trace may now join the caller's)."""
    record = _current.get()
    if record is not None:
        record.peer = peer
        for observer in record.observers:
            observer.admitted(record)


_METHODS = METHODS | METHODS_V1  # both dialects' methods are label values

def note_dialect(dialect: str) -> None:
    """The request's dialect is known by its route, whatever its A2A-Version says (the
    HTTP+JSON binding serves 1.0 only)."""
    record = _current.get()
    if record is not None:
        record.dialect = dialect


def note_method(method: str) -> None:
    record = _current.get()
    if record is not None:
        record.method = method if method in _METHODS else OTHER
        for observer in record.observers:
            observer.method(record)


def note_refusal(reason: str, peer: str | None = None) -> None:
    """Refused before the handler; `peer` once gate 1 passed."""
    record = _current.get()
    if record is not None:
        record.refusal = reason
        if peer is not None:
            record.peer = peer


def call_started(operation: str, method: str, dialect: str,
                 headers: Sequence[tuple[bytes, bytes]], bytes_in: int,
                 observers: tuple[Observer, ...] = ()) -> RequestRecord:
    """The record of a call that is not an HTTP request (a gRPC call), whose method is known
    from the start and whose request arrived whole: the observers' `started` hook has run,
    and `finished` ends it as it ends a request's."""
    record = RequestRecord(operation, "POST", dialect, headers, observers)  # HTTP/2's method
    record.method = method if method in _METHODS else OTHER
    record.bytes_in = bytes_in
    for observer in observers:
        observer.started(record)
    return record


def _template(path: str) -> re.Pattern[str]:
    pattern = re.escape(path)
    pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", pattern)
    return re.compile(pattern.rstrip("/") + "/?")


# The longest literal first: `/tasks/{id}:subscribe` before `/tasks/{id}`, which matches it too.
_ROUTES: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (op.method, op.operation_id, _template(op.path))
    for op in sorted(OPERATIONS, key=lambda op: -len(re.sub(r"\{[^}]+\}", "", op.path)))
)


# Paths are the caller's to choose (a task's id is in some), so the memo is bounded: a hit is
# one lookup instead of a walk over every operation's pattern (up to twice), and a flood of
# new paths only costs each its walk, as before.
@lru_cache(maxsize=512)
def operation_of(http_method: str, path: str) -> str:
    """The spec's operationId for the request (method and path), else `other`."""
    for method, operation_id, pattern in _ROUTES:
        if method == http_method and pattern.fullmatch(path):
            return operation_id
    for _, operation_id, pattern in _ROUTES:  # a wrong HTTP method on a known path
        if pattern.fullmatch(path):
            return operation_id
    return OTHER


def dialect_of(headers: Sequence[tuple[bytes, bytes]]) -> str:
    for name, value in headers:
        if name.lower() == DIALECT_HEADER:
            text = value.decode("latin-1").strip()
            return text if text in DIALECTS else OTHER
    return A2A_VERSION_0_3


class Observed:
    """The app, with an access event and the observers' hooks around every HTTP request."""

    def __init__(self, app: ASGIApp, observers: Sequence[Observer] = ()) -> None:
        self.app = app
        self.observers = tuple(observers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = scope["headers"]
        record = RequestRecord(
            operation_of(scope["method"], scope["path"]), scope["method"], dialect_of(headers),
            headers, self.observers,
        )
        token = _current.set(record)
        for observer in self.observers:
            observer.started(record)
        try:
            await self.app(scope, _counting_receive(receive, record),
                           _counting_send(send, record))
        finally:
            _current.reset(token)
            record.duration = time.perf_counter() - record.started
            if record.status == 0:
                record.status = 500  # the app raised before answering; the server answers 500
            self._finished(record)

    def _finished(self, record: RequestRecord) -> None:
        finished(record)


def finished(record: RequestRecord) -> None:
    """The access event of an answered request or call, and the observers' last hook."""
    emit(
        INBOUND_COMPLETED,
        operation=record.operation,
        method=record.method,
        status=record.status,
        peer_name=record.peer,
        duration_ms=round(record.duration * 1000, 3),
        bytes_in=record.bytes_in,
        bytes_out=record.bytes_out,
        reason=record.refusal,
    )
    for observer in record.observers:
        try:  # noqa: SIM105 - a plain try costs less than suppress, once per request
            observer.finished(record)
        except Exception:  # an observer's fault never reaches a caller
            pass


def _counting_receive(receive: Receive, record: RequestRecord) -> Callable[[], Awaitable[Message]]:
    async def counted() -> Message:
        message = await receive()
        body = message.get("body")
        if body:
            record.bytes_in += len(body)
        return message

    return counted


def _counting_send(send: Send, record: RequestRecord) -> Callable[[Message], Awaitable[None]]:
    async def counted(message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            record.status = int(message["status"])
        elif kind == "http.response.body":
            record.bytes_out += len(message.get("body") or b"")
        await send(message)

    return counted
