"""Following a task's event log: replay from a sequence number, then live, to the final event.

The log is durable and ordered (`TaskStore.events_after`), so a follower holds no events of
its own beyond one page read from the store: a slow reader only falls behind in the log and
the node never buffers for it without bound. Writes in this process wake the followers of
their task at once; a write by another worker or replica is seen at the next poll of the
log (POLL_SECONDS), so followers need no channel between processes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from pydantic import TypeAdapter

from synthorg.generated.models import V1StreamResponse
from synthorg.sequenced import Sequenced
from synthorg.store.tasks import TaskStore
from synthorg.tasks.events import ends_stream

PAGE = 64  # events read from the log at a time, per follower
POLL_SECONDS = 0.25  # how late a follower may learn of another process's write

_EVENT: TypeAdapter[V1StreamResponse] = TypeAdapter(V1StreamResponse)
Page = list[Sequenced[V1StreamResponse]]


class TaskStreams:
    def __init__(self, store: TaskStore, poll_seconds: float = POLL_SECONDS) -> None:
        self._store = store
        self._poll = poll_seconds
        self._waiting: dict[str, set[asyncio.Event]] = {}
        # Reads in flight, by (peer, task, after): the followers of one task woken by one
        # write share one read of the log and one parse of its events.
        self._reads: dict[tuple[str, str, int], asyncio.Future[Page]] = {}
        self._listeners: list[Callable[[str], None]] = []
        # One timer for every follower, not one per wait: a write wakes all the followers of
        # its task, and a timer each would be made and cancelled for every event. It lives
        # while there are followers, on their loop: the last one to leave cancels it, and a
        # follower on another loop (the timer's own closed, its callback never to run)
        # starts one of its own.
        self._ticker: asyncio.TimerHandle | None = None
        self._ticker_loop: asyncio.AbstractEventLoop | None = None

    def on_write(self, listener: Callable[[str], None]) -> None:
        """Call `listener(task_id)` on every write in this process (the push deliverer)."""
        self._listeners.append(listener)

    def _tick(self) -> None:
        """Wake every follower to read its log: another process's writes are not notified."""
        for waiting in self._waiting.values():
            for woken in waiting:
                woken.set()
        self._ticker = (
            asyncio.get_running_loop().call_later(self._poll, self._tick)
            if self._waiting else None
        )

    def _keep_ticking(self) -> None:
        loop = asyncio.get_running_loop()
        if self._ticker is not None and self._ticker_loop is loop:
            return
        if self._ticker is not None:
            self._ticker.cancel()
        self._ticker, self._ticker_loop = loop.call_later(self._poll, self._tick), loop

    def _stop_ticking(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        self._ticker = self._ticker_loop = None

    def notify(self, task_id: str) -> None:
        """Something was logged for the task: wake its followers in this process."""
        for woken in self._waiting.get(task_id, ()):
            woken.set()
        for listener in self._listeners:
            listener(task_id)

    async def follow(
        self, peer: str, task_id: str, after: int
    ) -> AsyncIterator[Sequenced[V1StreamResponse]]:
        woken = asyncio.Event()
        self._waiting.setdefault(task_id, set()).add(woken)
        self._keep_ticking()
        try:
            while True:
                woken.clear()  # before the read: a write after it wakes the wait below
                page = await self._page(peer, task_id, after)
                for item in page:
                    after = item.seq
                    yield item
                    if ends_stream(item.event):
                        return
                if len(page) < PAGE:
                    await woken.wait()  # a write here, or the next poll tick
        finally:
            waiting = self._waiting.get(task_id)
            if waiting is not None:
                waiting.discard(woken)
                if not waiting:
                    del self._waiting[task_id]
            if not self._waiting:
                self._stop_ticking()

    async def _page(self, peer: str, task_id: str, after: int) -> Page:
        """One read of the log shared by the followers that ask for it in the same loop turn:
        the first reads it, the others take its result. A read that does not wait (SQLite) is
        done before the next follower asks, so they share it without waking again; a read
        that waits (PostgreSQL) is waited for. When the first reader fails or goes away, the
        others read for themselves."""
        key = (peer, task_id, after)
        while (shared := self._reads.get(key)) is not None:
            if not shared.done():
                await asyncio.wait((shared,))  # never cancels the reader's read
            if not shared.cancelled() and shared.exception() is None:
                return shared.result()
            if self._reads.get(key) is shared:  # the reader went away: read again
                del self._reads[key]
        loop = asyncio.get_running_loop()
        shared = loop.create_future()
        self._reads[key] = shared
        try:
            page = await self._read(peer, task_id, after)
        except BaseException as exc:
            if isinstance(exc, Exception):
                shared.set_exception(exc)
                shared.exception()  # marked retrieved: the others read again, as said above
            else:
                shared.cancel()
            raise
        finally:
            # Kept for the rest of this loop turn, for the followers woken by the same write.
            loop.call_soon(self._forget, key, shared)
        shared.set_result(page)
        return page

    def _forget(
        self, key: tuple[str, str, int], shared: asyncio.Future[Page]
    ) -> None:
        if self._reads.get(key) is shared:
            del self._reads[key]

    async def _read(self, peer: str, task_id: str, after: int) -> Page:
        page = await self._store.events_after(peer, task_id, after, PAGE)
        return [
            Sequenced(logged.seq, _EVENT.validate_json(logged.body), logged.body.encode())
            for logged in page
        ]
