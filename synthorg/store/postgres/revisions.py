"""Has the catalog or the settings changed, on any replica? Known without asking, per request.

Statement triggers move a counter in `revisions` on every change to `peers` or `settings`,
whoever writes (a replica, the CLI), and announce the new value at the writer's commit
(NOTIFY). Each process listens for it on a connection of its own (`listener.py`), so a
request takes the counters as last announced, with no round trip; the cached views (the
catalog's records, the settings) reload themselves then if their counter moved. A change
applies on every replica from the first request after its announcement arrived (on a local
network, well under a millisecond after the commit); through this process (its admin API)
it applies from the next request, as the writer marks its own snapshot stale.

While no connection listens (not open yet, or lost: `store.revisions.polling`), a request
reads the counters itself, as before notifications: the read is sent after the request
started and shared by every request that starts before it is sent (those decoded in the same
turn of the event loop), so under load the node pays one round trip per loop turn rather than
per request, and a change committed before a request starts applies to it exactly. The
listener comes back by itself (`store.revisions.listening`).

Outside a request (the admin API, the CLI, start-up) each check reads afresh, from a blocking
caller's thread (`PgDatabase.blocking`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextvars import ContextVar

from synthorg.store.postgres.database import PgDatabase, Row
from synthorg.store.postgres.listener import Reading, RevisionListener, as_reading

CATALOG = "catalog"
SETTINGS = "settings"
Refresher = Callable[[Reading], Awaitable[None]]

_READ = "SELECT name, value FROM revisions"
_reading: ContextVar[Reading | None] = ContextVar("synthorg_pg_revisions", default=None)


class PgRevisions:
    def __init__(self, db: PgDatabase, listen: bool = True) -> None:
        """`listen=False`: every request's counters are read (one query per loop turn)."""
        self._db = db
        self._next: asyncio.Future[Reading] | None = None  # the read not sent yet
        self._refreshers: list[Refresher] = []
        self.listener = RevisionListener(db.options) if listen else None
        self.reads = 0  # counter reads sent for requests (none while the listener listens)

    def on_request(self, refresher: Refresher) -> None:
        """Call `refresher` with each request's reading, before the request goes on."""
        self._refreshers.append(refresher)

    async def request_started(self) -> None:
        listener = self.listener
        reading = None if listener is None else listener.current()
        if reading is None:
            reading = await self._shared_read()
        _reading.set(reading)
        for refresh in self._refreshers:
            await refresh(reading)

    async def _shared_read(self) -> Reading:
        future = self._next
        if future is None:
            loop = asyncio.get_running_loop()
            future = self._next = loop.create_future()
            loop.call_soon(self._send, future)  # after this turn's other requests joined it
        return await asyncio.shield(future)

    def _send(self, future: asyncio.Future[Reading]) -> None:
        self._next = None
        self.reads += 1
        task = asyncio.get_running_loop().create_task(self._db.fetch(_READ))

        def settle(done: asyncio.Task[list[Row]]) -> None:
            if future.done():
                return
            if done.cancelled():
                future.cancel()
            elif (exc := done.exception()) is not None:
                future.set_exception(exc)
            else:
                future.set_result(as_reading(done.result()))

        task.add_done_callback(settle)

    def of(self, name: str) -> int:
        """The counter as this request read it; outside a request, read now."""
        reading = _reading.get()
        if reading is None:
            reading = self.read_blocking()
        return reading.get(name, 0)

    def read_blocking(self) -> Reading:
        return as_reading(self._db.blocking_fetch(_READ))

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()
