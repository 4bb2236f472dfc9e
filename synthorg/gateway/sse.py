"""A stream's answer as Server-Sent Events (`text/event-stream`): one event per JSON-RPC
response, its `id` the event's sequence number in the task's log (what `Last-Event-ID`
names when the caller resumes), `: keep-alive` comments while the task is quiet, and the
end of the response after the final event.

Memory per stream is bounded: the writer sends each event as the task's follower yields it
and waits while the reader's socket drains, and the follower reads the durable log a page at
a time, so a reader that does not keep up only holds its place in the log. A caller that
goes away ends its stream (and its follower) at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel
from starlette.types import Receive, Send

from synthorg import jsonrpc
from synthorg.dialects.errors import error_details, http_error
from synthorg.gateway.gates import Refused
from synthorg.gateway.replies import RequestId, encoded, result_body
from synthorg.generated.constants import INTERNAL_ERROR, MEDIA_TYPE_TEXT_EVENT_STREAM, RpcErrorSpec
from synthorg.observability.events import a2a as events
from synthorg.observability.log import emit
from synthorg.sequenced import Sequenced

KEEPALIVE_SECONDS = 15.0
FAIR_EVERY = 16  # events a writer sends before it lets the loop turn
HEADERS = [
    (b"content-type", MEDIA_TYPE_TEXT_EVENT_STREAM.encode()),
    (b"cache-control", b"no-store"),
    (b"x-accel-buffering", b"no"),  # a proxy in front must not hold events back
]
KEEPALIVE = b": keep-alive\n\n"


# Characters some line readers split on although SSE does not (NEL, LINE and PARAGRAPH
# SEPARATOR): JSON carries them raw inside strings, so they are escaped in a frame.
_LINE_BREAKS = ((b"\xc2\x85", b"\\u0085"), (b"\xe2\x80\xa8", b"\\u2028"),
                (b"\xe2\x80\xa9", b"\\u2029"))


def frame(request_id: RequestId, item: Sequenced[Any], encoded_id: bytes | None = None,
          *, bare: bool = False) -> bytes:
    """One event as SSE: its data a JSON-RPC response, or (`bare`: the HTTP+JSON binding)
    the event itself."""
    if bare:
        data = encoded(item.event)  # a 1.0 event, made for this stream (never the log's)
    elif item.raw is not None:  # as logged: the same bytes for every subscriber
        data = jsonrpc.result(
            encoded_id if encoded_id is not None else jsonrpc.encoded_id(request_id), item.raw
        )
    else:
        event: BaseModel = item.event
        data = result_body(request_id, event)
    for raw, escaped in _LINE_BREAKS:
        if raw in data:
            data = data.replace(raw, escaped)
    return b"id: %d\ndata: %s\n\n" % (item.seq, data)


async def _nothing() -> AsyncIterator[Sequenced[Any]]:
    return
    yield  # an async generator that ends at once


class EventStream:
    """An admitted stream whose first event is already known. A refusal by the method itself
    (an unknown task, say) is a stream of one event too, a JSON-RPC error without an id, as
    streaming clients expect; malformed requests are answered as plain JSON before this."""

    def __init__(
        self,
        request_id: RequestId,
        first: Sequenced[Any] | bytes,
        rest: AsyncIterator[Sequenced[Any]],
        peer: str,
        keepalive_seconds: float = KEEPALIVE_SECONDS,
        v1: bool = False,  # a 1.0 stream: a refusal it ends with carries 1.0's error.data
        bare: bool = False,  # HTTP+JSON: each event's data the event, an error google.rpc's
    ) -> None:
        self.request_id, self._first, self._rest = request_id, first, rest
        self._peer, self._keepalive, self._v1 = peer, keepalive_seconds, v1 or bare
        self._bare = bare
        self._last_write = time.monotonic()

    @classmethod
    def refusal(cls, request_id: RequestId, error: bytes, peer: str) -> EventStream:
        return cls(request_id, b"data: %s\n\n" % error, _nothing(), peer)

    async def respond(
        self, send: Send, receive: Receive, revoked: asyncio.Future[Refused] | None = None
    ) -> None:
        """Send the stream until it ends, the caller goes away, or `revoked` completes (the
        gates no longer admit the caller: the stream ends with their refusal)."""
        await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
        first = self._first
        if isinstance(first, bytes):
            await _body(send, first)
        else:  # a quiet first event: admitted with nothing to send yet, so a keep-alive
            await _body(send, KEEPALIVE if first.quiet else self._frame(first))
        lock = asyncio.Lock()  # one body message at a time: the writer's, or a keep-alive
        writer = asyncio.ensure_future(self._write(send, lock))
        gone = asyncio.ensure_future(_disconnect(receive))
        waits: set[asyncio.Future[Any]] = {writer, gone}
        if revoked is not None:
            waits.add(revoked)
        try:
            while True:
                due = self._keepalive - self._quiet_for()
                if due <= 0 and not lock.locked() and not writer.done():
                    async with lock:
                        await _body(send, KEEPALIVE)
                        self._last_write = time.monotonic()
                    continue
                # Woken once per keep-alive period, not per event (the writer sends those);
                # a writer held by a slow reader is not quiet, so no keep-alive is owed.
                done, _ = await asyncio.wait(
                    waits, timeout=due if due > 0 else self._keepalive,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if revoked is not None and revoked in done and not revoked.cancelled():
                    await self._revoke(send, writer, lock, revoked.result())
                    return
                if writer in done:
                    if writer.result():
                        await send({"type": "http.response.body", "body": b"",
                                    "more_body": False})
                    return
                if gone in done:
                    return  # the caller left: nothing more to send
        finally:
            gone.cancel()
            writer.cancel()
            await asyncio.wait({writer})
            with contextlib.suppress(Exception):
                await _aclose(self._rest)

    async def _revoke(
        self, send: Send, writer: asyncio.Future[bool], lock: asyncio.Lock, refusal: Refused
    ) -> None:
        writer.cancel()
        await asyncio.wait({writer})
        emit(events.STREAM_REVOKED, level="warning", peer_name=self._peer,
             request_id=self.request_id, reason=refusal.reason, status=refusal.status)
        async with lock:
            await _body(send, b"data: %s\n\n" % self._error(refusal.error, refusal.message))
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _error(self, error: RpcErrorSpec, message: str | None) -> bytes:
        """An error that ends the stream, in the stream's binding and dialect."""
        if self._bare:
            return http_error(error, message)[1]
        data = error_details(error, None) if self._v1 else None
        return jsonrpc.error(error, message, self.request_id, data)

    def _frame(self, item: Sequenced[Any], encoded_id: bytes | None = None) -> bytes:
        return frame(self.request_id, item, encoded_id, bare=self._bare)

    def _quiet_for(self) -> float:
        return time.monotonic() - self._last_write

    async def _write(self, send: Send, lock: asyncio.Lock) -> bool:
        """Send each event as the follower yields it. A reader that does not keep up holds
        `send` (the server waits for its socket to drain), so the follower reads no further:
        nothing queues. True when the stream ended; False after the follower failed."""
        events_ = aiter(self._rest)
        encoded_id = jsonrpc.encoded_id(self.request_id)
        sent = 0
        while True:
            try:
                item = await anext(events_)
            except StopAsyncIteration:
                return True
            except Exception as exc:  # the follower failed (the store went away): say so, end
                emit(events.INTERNAL_ERROR, level="error", peer_name=self._peer,
                     request_id=self.request_id, error=type(exc).__name__,
                     reason="stream_failed")
                async with lock:
                    failure = (self._error(INTERNAL_ERROR, None) if self._bare
                               else jsonrpc.error(INTERNAL_ERROR, None, self.request_id))
                    await _body(send, b"data: %s\n\n" % failure)
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                return False
            if item.quiet:
                continue
            data = self._frame(item, encoded_id)
            async with lock:
                await _body(send, data)
                self._last_write = time.monotonic()
            sent += 1
            if sent % FAIR_EVERY == 0:
                # A replay from a log read without waiting, to a reader that keeps up, never
                # waits either: let the loop's other work in now and then.
                await asyncio.sleep(0)


async def _body(send: Send, chunk: bytes) -> None:
    await send({"type": "http.response.body", "body": chunk, "more_body": True})


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _aclose(iterator: AsyncIterator[Any]) -> None:
    close = getattr(iterator, "aclose", None)
    if close is not None:
        await close()
