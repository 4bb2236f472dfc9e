"""uvicorn's httptools protocol with bounds on what one connection may cost the node.

What it adds to `HttpToolsProtocol`, per connection:

- Size of the head. The request line and the header fields together may take
  `max_header_bytes`, in at most `max_header_count` fields. httptools buffers a header value
  until its line ends, so the parser's callbacks alone would see a 200 MiB value only once it
  had been buffered whole: `data_received` also counts the raw bytes that arrive while a head is
  incomplete and refuses once they pass the cap (one read past it at most). The callbacks give
  the exact count when a head completes inside a read. Beyond either cap: 431.
- Time. The headers must be complete within `header_timeout` of the connection's opening or of
  the previous response's end (408; a kept-alive connection on which nothing arrived is closed
  silently, as uvicorn's keep-alive timer does), and the body within `body_timeout` of the
  headers' end (408, or only a close if the answer has already started). Each bound is one
  `loop.call_later` handle, armed and cancelled at those points: nothing runs per byte.
- TLS. On an HTTPS connection every request's scope carries the ASGI TLS extension
  (`scope["extensions"]["tls"]`, see `tls.py`) with the client certificate the handshake
  verified, read once from the connection's TLS object.
- One write per answer. A response of known length leaves in one `transport.write`, its
  head with its body (`_Cycle`): uvicorn writes them apart, two system calls for what is
  most often one small JSON answer. A streamed (chunked) response's head leaves at once, as
  does a HEAD answer's (no body follows). An app that fails between head and body leaves only
  the close on the wire.
- Count. A connection beyond `max_connections` open in this process is answered 503 as soon as
  it is accepted and closed at once, before anything on it is read; the connections already
  open are not touched.

Every refusal is a JSON-RPC error envelope (-32600, id null) with `Connection: close`, the event
`a2a.inbound.rejected` (`reason`, `status`, `client`; never header contents) and then a short
lingering close: the write side is shut at once (the client reads the answer, then EOF), what the
client still sends is read and dropped for up to `LINGER_SECONDS`, so a client still sending gets
the answer rather than a reset, and then the socket is closed.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, cast

import httptools
from uvicorn.protocols.http.httptools_impl import (
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)

from synthorg import jsonrpc
from synthorg.generated.constants import INVALID_REQUEST, MEDIA_TYPE_APPLICATION_JSON
from synthorg.http.limits import DEFAULT_LIMITS, ServerLimits
from synthorg.observability.events.a2a import INBOUND_REJECTED
from synthorg.observability.log import emit
from synthorg.tls.context import scope_extension

if TYPE_CHECKING:
    from uvicorn._types import ASGISendEvent

LINGER_SECONDS = 1.0
RETRY_AFTER_SECONDS = 1
# Per header line beyond the name and value the parser reports: ": " and CRLF.
_HEADER_LINE_OVERHEAD = 4


class Refusal(NamedTuple):
    status: int
    reason: str  # the event's reason
    message: str  # the error envelope's message
    limit: float | int


class _Refused(Exception):
    """Raised from a parser callback to stop the parser; `data_received` answers."""


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    limits: ClassVar[ServerLimits] = DEFAULT_LIMITS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True  # no head has completed since the last message (or the opening)
        self._head_started = False  # the parser saw the first byte of the current message
        self._head_received = 0  # raw bytes read while the current head was incomplete
        self._head_parsed = 0  # request-target and header bytes the parser reported
        self._header_count = 0
        self._awaiting_body = False  # headers complete, message not yet
        self._served = False  # a response has completed on this connection
        self._refusal: Refusal | None = None  # set by a callback before it stops the parser
        self._pending: Refusal | None = None  # waits for the answer in progress to finish
        self._refused = False  # answered or closing: whatever arrives now is dropped
        self._header_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._linger_timer: asyncio.TimerHandle | None = None
        self._tls: dict[object, object] | None = None  # the ASGI TLS extension, on HTTPS

    # -- connection -------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.limits.max_connections:
            # Not registered with the server and nothing read: answer, close, free the socket.
            self.transport = transport
            self.client = _peer_address(transport)
            self._refused = True
            self._emit(
                Refusal(
                    503,
                    "too_many_connections",
                    "Too many connections; try again later",
                    self.limits.max_connections,
                )
            )
            transport.write(
                self._answer(
                    503,
                    "Too many connections; try again later",
                    (b"retry-after", str(RETRY_AFTER_SECONDS).encode("ascii")),
                )
            )
            transport.close()
            return
        super().connection_made(transport)
        self._tls = scope_extension(transport)
        self._header_timer = self.loop.call_later(
            self.limits.header_timeout, self._header_timed_out
        )

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._cancel_timers()
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # answered (or about to be): what the client still sends is dropped
        self._unset_keepalive_if_required()
        if self._in_head:
            self._head_received += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            refusal, self._refusal = self._refusal, None
            if refusal is not None:
                self._refuse(refusal)
                return
            message = "Invalid HTTP request received."
            self.logger.warning(message)
            self.send_400_response(message)
            return
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        if self._in_head:
            if self._head_received > self.limits.max_header_bytes:
                self._refuse(self._head_too_large())
        elif self._awaiting_body and self._body_timer is None:
            self._body_timer = self.loop.call_later(self.limits.body_timeout, self._body_timed_out)

    # -- parser callbacks -------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._tls is not None:
            tls = dict(self._tls)
            self.scope["extensions"] = {"tls": tls}
        self._head_started = True
        self._head_parsed = 0
        self._header_count = 0

    def on_url(self, url: bytes) -> None:
        self._head_parsed += len(url)
        if self._head_parsed > self.limits.max_header_bytes:
            self._stop(self._head_too_large())
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        # Also called for the trailer fields of a chunked body: they count against the caps.
        self._header_count += 1
        self._head_parsed += len(name) + len(value) + _HEADER_LINE_OVERHEAD
        if self._header_count > self.limits.max_header_count:
            self._stop(
                Refusal(
                    431,
                    "too_many_headers",
                    f"Too many header fields; at most {self.limits.max_header_count}",
                    self.limits.max_header_count,
                )
            )
        if self._head_parsed > self.limits.max_header_bytes:
            self._stop(self._head_too_large())
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_received = 0
        self._awaiting_body = True
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and type(cycle) is RequestResponseCycle:
            # uvicorn builds its own cycle; its task has not run yet, so the cycle can still
            # take the subclass that holds a head for its body (no state of its own to set).
            cycle.__class__ = _Cycle

    def on_message_complete(self) -> None:
        self._awaiting_body = False
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        self._in_head = True
        self._head_started = False
        self._head_received = 0
        super().on_message_complete()
        cycle = self.cycle
        if cycle is not None and cycle.response_complete and not self.pipeline:
            # Answered before its body ended (e.g. refused on its headers): the idle clocks
            # start now, since on_response_complete could not start them.
            self._arm_idle_timers()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._served = True
        # uvicorn armed its keep-alive timer only if no request is queued or in progress:
        # that is when a refusal may be written, and when the next request's clock starts.
        if self.timeout_keep_alive_task is None or self.transport.is_closing():
            return
        if self._pending is not None:
            refusal, self._pending = self._pending, None
            self._answer_and_close(refusal, reported=True)
            return
        if self._awaiting_body:
            return  # answered before its body ended: the body timer still runs
        self._arm_idle_timers()

    # -- timers -----------------------------------------------------------------------------

    def _arm_idle_timers(self) -> None:
        """Between requests: uvicorn's keep-alive timer, and the next request's header clock."""
        if self._refused or self.transport.is_closing():
            return
        if self.timeout_keep_alive_task is None:
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._header_timer = self.loop.call_later(
            self.limits.header_timeout, self._header_timed_out
        )

    def _header_timed_out(self) -> None:
        self._header_timer = None
        if self._refused or self.transport.is_closing():
            return
        if self._served and not self._head_started and self._head_received == 0:
            self.transport.close()  # an idle kept-alive connection: no request to answer
            return
        timeout = self.limits.header_timeout
        self._refuse(
            Refusal(
                408,
                "header_timeout",
                f"Request headers not complete within {timeout:g} s",
                timeout,
            )
        )

    def _body_timed_out(self) -> None:
        self._body_timer = None
        if self._refused or self.transport.is_closing() or not self._awaiting_body:
            return
        timeout = self.limits.body_timeout
        self._refuse_current(
            Refusal(
                408,
                "body_timeout",
                f"Request body not complete within {timeout:g} s",
                timeout,
            )
        )

    def _cancel_timers(self) -> None:
        for name in ("_header_timer", "_body_timer"):
            timer: asyncio.TimerHandle | None = getattr(self, name)
            if timer is not None:
                timer.cancel()
                setattr(self, name, None)
        self._unset_keepalive_if_required()

    # -- refusals ---------------------------------------------------------------------------

    def _head_too_large(self) -> Refusal:
        cap = self.limits.max_header_bytes
        return Refusal(
            431,
            "header_too_large",
            f"Request line and header fields exceed {cap} bytes",
            cap,
        )

    def _stop(self, refusal: Refusal) -> None:
        self._refusal = refusal
        raise _Refused

    def _refuse(self, refusal: Refusal) -> None:
        if not self._in_head:
            self._refuse_current(refusal)  # trailer fields over a cap
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            # An earlier (pipelined) request is still being answered: the refusal follows
            # that answer, and nothing more is read meanwhile.
            self._refused = True
            self._pending = refusal
            self._cancel_timers()
            self._emit(refusal)  # now: that answer may yet end with the connection closed
            return
        self._answer_and_close(refusal)

    def _refuse_current(self, refusal: Refusal) -> None:
        """Refuse the request whose body is being read."""
        cycle = self.cycle
        queued = any(waiting is cycle for waiting, _ in self.pipeline)
        if cycle is None or cycle.response_started or queued:
            # Its answer has started (or another request's is being written): there is no
            # clean place for one more, so the connection is only closed.
            self._refused = True
            self._cancel_timers()
            self._emit(refusal._replace(status=0))
            self.transport.close()
            return
        # The app is waiting for the body: it is told the client left, and an answer it
        # still writes goes nowhere.
        cycle.disconnected = True
        cycle.message_event.set()
        self._answer_and_close(refusal)

    def _answer_and_close(self, refusal: Refusal, reported: bool = False) -> None:
        self._refused = True
        self._cancel_timers()
        if not reported:
            self._emit(refusal)
        self.transport.write(self._answer(refusal.status, refusal.message))
        # Lingering close: shut the write side now and drop what the client still sends.
        if self.flow is not None:
            self.flow.resume_reading()
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self._linger_timer = self.loop.call_later(LINGER_SECONDS, self.transport.close)
        else:
            self.transport.close()

    def _answer(self, status: int, message: str, *extra: tuple[bytes, bytes]) -> bytes:
        body = jsonrpc.error(INVALID_REQUEST, message)
        headers = [
            *self.server_state.default_headers,
            (b"content-type", MEDIA_TYPE_APPLICATION_JSON.encode()),
            (b"content-length", str(len(body)).encode("ascii")),
            (b"connection", b"close"),
            *extra,
        ]
        lines = [STATUS_LINE[status], *(name + b": " + value + b"\r\n" for name, value in headers)]
        return b"".join([*lines, b"\r\n", body])

    def _emit(self, refusal: Refusal) -> None:
        emit(
            INBOUND_REJECTED,
            level="warning",
            reason=refusal.reason,
            status=refusal.status or None,  # None: nothing could be answered, only closed
            limit=refusal.limit,
            client=self.client[0] if self.client else None,
        )


class _Cycle(RequestResponseCycle):
    """uvicorn's request cycle, writing a fixed-length response's head with its body."""

    _head: bytes | None = None  # the response head, held for the body's first write

    async def send(self, message: ASGISendEvent) -> None:
        if self.flow.write_paused and not self.disconnected:
            # uvicorn's own wait, taken first: no other task (receive's 100 Continue) ever
            # finds the stand-ins below in place of the transport.
            await self.flow.drain()
        transport = self.transport
        if not self.response_started:
            # uvicorn writes the head once it has checked it: take the bytes instead.
            taken = _Taken(transport)
            self.transport = cast(asyncio.Transport, taken)
            try:
                await super().send(message)
            finally:
                self.transport = transport
            if taken.data is None:
                return  # the client has gone
            if self.chunked_encoding or self.scope["method"] == "HEAD":
                # A stream: its head now, its chunks as they come. HEAD: no body write follows.
                transport.write(taken.data)
            else:
                self._head = taken.data
            return
        head, self._head = self._head, None
        if head is None:
            await super().send(message)
            return
        # The body's first write carries the head; whatever else uvicorn does with the
        # transport (close it, on a Connection: close answer) goes straight through.
        self.transport = cast(asyncio.Transport, _Prefixed(transport, head))
        try:
            await super().send(message)
        finally:
            self.transport = transport


class _Taken:
    """Stands for the transport while uvicorn writes a response head: keeps the bytes."""

    __slots__ = ("data", "transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.data: bytes | None = None

    def write(self, data: bytes) -> None:
        self.data = data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class _Prefixed:
    """Stands for the transport while uvicorn writes a body: the first write carries `head`."""

    __slots__ = ("head", "transport")

    def __init__(self, transport: asyncio.Transport, head: bytes) -> None:
        self.transport = transport
        self.head: bytes | None = head

    def write(self, data: bytes) -> None:
        head, self.head = self.head, None
        self.transport.write(data if head is None else head + data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


def _peer_address(transport: asyncio.Transport) -> tuple[str, int] | None:
    peer = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and len(peer) >= 2:
        return str(peer[0]), int(peer[1])
    return None


def protocol_class(limits: ServerLimits) -> type[LimitedHttpToolsProtocol]:
    """The protocol class to hand uvicorn (`Config(http=...)`), bound to `limits`.

    The limits are the class's, for this process: a module-level class can be handed to
    worker processes (each sets its own limits when it builds its app), a class made here
    could not."""
    LimitedHttpToolsProtocol.limits = limits
    return LimitedHttpToolsProtocol
