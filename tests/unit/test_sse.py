"""The SSE writer on its own: keep-alives while quiet, nothing queued in front of a slow
reader, and a caller that leaves ending the follower. Driven in process; every wait is on a
condition, never a sleep."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from synthorg.gateway.sse import KEEPALIVE, EventStream
from synthorg.generated.models import TextPart
from synthorg.sequenced import Sequenced


def item(n: int) -> Sequenced[Any]:
    return Sequenced(n, TextPart(kind="text", text=f"event {n}"))


class Recorder:
    """An ASGI `send` that can be held (a reader that does not read)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.open = asyncio.Event()
        self.open.set()
        self.changed = asyncio.Condition()

    async def __call__(self, message: dict[str, Any]) -> None:
        await self.open.wait()
        async with self.changed:
            self.bodies.append(message.get("body", b""))
            self.changed.notify_all()

    async def wait_for(self, predicate: Any) -> None:
        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(lambda: predicate(self.bodies)), 10)


async def never_disconnect() -> dict[str, Any]:
    await asyncio.Event().wait()
    return {}


def test_a_quiet_stream_gets_keep_alives_then_its_events() -> None:
    async def scenario() -> list[bytes]:
        go = asyncio.Event()

        async def events() -> AsyncIterator[Sequenced[Any]]:
            await go.wait()
            yield item(2)

        send = Recorder()
        stream = EventStream(7, item(1), events(), "peer", keepalive_seconds=0.01)
        responding = asyncio.ensure_future(stream.respond(send, never_disconnect))
        await send.wait_for(lambda bodies: KEEPALIVE in bodies)
        go.set()
        await asyncio.wait_for(responding, 10)
        return send.bodies

    bodies = asyncio.run(scenario())
    text = b"".join(bodies)
    assert text.index(b"id: 1\n") < text.index(KEEPALIVE) < text.index(b"id: 2\n")
    assert b'"id": 7' in text
    assert bodies[-1] == b""  # the response ends after the last event


def test_a_reader_that_does_not_read_holds_no_queue() -> None:
    async def scenario() -> int:
        pulled = 0

        async def endless() -> AsyncIterator[Sequenced[Any]]:
            nonlocal pulled
            for n in range(2, 1_000_000):
                pulled += 1
                yield item(n)

        send = Recorder()
        stream = EventStream(1, item(1), endless(), "peer")
        responding = asyncio.ensure_future(stream.respond(send, never_disconnect))
        await send.wait_for(lambda bodies: len(bodies) >= 3)  # start, first events
        send.open.clear()  # the reader stops reading
        stopped_at = pulled
        seen = -1
        while seen != pulled:  # until the writer can pull no more
            seen = pulled
            for _ in range(100):
                await asyncio.sleep(0)  # let every ready task run (no timing involved)
        responding.cancel()
        return pulled - stopped_at

    # At most the event the writer holds for the reader, and the one being pulled: no queue.
    assert asyncio.run(scenario()) <= 2


def test_a_caller_that_leaves_ends_the_follower() -> None:
    async def scenario() -> bool:
        closed = asyncio.Event()
        gone = asyncio.Event()

        async def events() -> AsyncIterator[Sequenced[Any]]:
            try:
                await asyncio.Event().wait()
                yield item(2)
            finally:
                closed.set()

        async def receive() -> dict[str, Any]:
            await gone.wait()
            return {"type": "http.disconnect"}

        send = Recorder()
        stream = EventStream(1, item(1), events(), "peer")
        responding = asyncio.ensure_future(stream.respond(send, receive))
        await send.wait_for(lambda bodies: len(bodies) >= 2)
        gone.set()
        await asyncio.wait_for(responding, 10)
        return closed.is_set()

    assert asyncio.run(scenario())
