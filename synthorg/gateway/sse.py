"""A stream's answer as Server-Sent Events (`text/event-stream`): one event per JSON-RPC
response, its `id` the event's sequence number in the task's log (what `Last-Event-ID`
names when the caller resumes), `: keep-alive` comments while the task is quiet, and the
end of the response after the final event.

Memory per stream is bounded: a pump moves events from the task's follower into a queue of
QUEUE_SIZE, and the follower reads the durable log a page at a time, so a reader that does
not keep up only holds its place in the log. A caller that goes away ends its stream (and
its follower) at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel
from starlette.types import Receive, Send

from synthorg.gateway.replies import RequestId, error_body, result_body
from synthorg.generated.constants import INTERNAL_ERROR
from synthorg.observability.events import a2a as events
from synthorg.observability.log import emit
from synthorg.sequenced import Sequenced

KEEPALIVE_SECONDS = 15.0
QUEUE_SIZE = 16
HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-store"),
    (b"x-accel-buffering", b"no"),  # a proxy in front must not hold events back
]
KEEPALIVE = b": keep-alive\n\n"
_END = object()


# Characters some line readers split on although SSE does not (NEL, LINE and PARAGRAPH
# SEPARATOR): JSON carries them raw inside strings, so they are escaped in a frame.
_LINE_BREAKS = ((b"\xc2\x85", b"\\u0085"), (b"\xe2\x80\xa8", b"\\u2028"),
                (b"\xe2\x80\xa9", b"\\u2029"))


def frame(request_id: RequestId, item: Sequenced[Any]) -> bytes:
    if item.raw is not None:  # as logged: the same bytes for every subscriber
        data = b'{"jsonrpc": "2.0", "id": %s, "result": %s}' % (
            json.dumps(request_id).encode(), item.raw
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
    ) -> None:
        self.request_id, self._first, self._rest = request_id, first, rest
        self._peer, self._keepalive = peer, keepalive_seconds

    @classmethod
    def refusal(cls, request_id: RequestId, error: bytes, peer: str) -> EventStream:
        return cls(request_id, b"data: %s\n\n" % error, _nothing(), peer)

    async def respond(self, send: Send, receive: Receive) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
        queue: asyncio.Queue[object] = asyncio.Queue(QUEUE_SIZE)
        pump = asyncio.ensure_future(self._pump(queue))
        gone = asyncio.ensure_future(_disconnect(receive))
        try:
            first = self._first
            await _body(send, first if isinstance(first, bytes) else frame(self.request_id, first))
            while True:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait(
                    {getter, gone}, timeout=self._keepalive,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if getter not in done:
                    getter.cancel()
                    if gone in done:
                        return  # the caller left: nothing more to send
                    await _body(send, KEEPALIVE)
                    continue
                item = getter.result()
                if item is _END:
                    break
                if isinstance(item, Sequenced):
                    await _body(send, frame(self.request_id, item))
                else:  # the follower failed (e.g. the store went away): say so, and end
                    await _body(send, b"data: %s\n\n" % error_body(
                        INTERNAL_ERROR, None, self.request_id
                    ))
                    break
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            gone.cancel()
            pump.cancel()
            await asyncio.wait({pump})
            with contextlib.suppress(Exception):
                await _aclose(self._rest)

    async def _pump(self, queue: asyncio.Queue[object]) -> None:
        try:
            async for item in self._rest:
                await queue.put(item)  # waits while the reader is behind: bounded
        except Exception as exc:
            emit(events.INTERNAL_ERROR, level="error", peer_name=self._peer,
                 request_id=self.request_id, error=type(exc).__name__, reason="stream_failed")
            await queue.put(exc)
            return
        await queue.put(_END)


async def _body(send: Send, chunk: bytes) -> None:
    await send({"type": "http.response.body", "body": chunk, "more_body": True})


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _aclose(iterator: AsyncIterator[Any]) -> None:
    close = getattr(iterator, "aclose", None)
    if close is not None:
        await close()
