"""Has the catalog or the settings changed, on any replica? One counter read per request.

Statement triggers move a counter in `revisions` on every change to `peers` or `settings`,
whoever writes (a replica, the CLI). A request reads the counters once, at its start, before
the gate; the cached views (the catalog's records, the settings) reload themselves then if
their counter moved, so a change committed before a request starts applies to that request,
on every replica, exactly.

The read is shared: every request that starts before the read is sent (those decoded in the
same turn of the event loop) takes the same answer, so under load the node pays one round
trip per loop turn rather than per request. A reading is never older than the request that
uses it, because the read is sent after the request started.

Outside a request (the admin API, the CLI, start-up) each check reads afresh, from a blocking
caller's thread (`PgDatabase.blocking`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextvars import ContextVar

from synthorg.store.postgres.database import PgDatabase, Row

CATALOG = "catalog"
SETTINGS = "settings"
Reading = dict[str, int]
Refresher = Callable[[Reading], Awaitable[None]]

_READ = "SELECT name, value FROM revisions"
_reading: ContextVar[Reading | None] = ContextVar("synthorg_pg_revisions", default=None)


def _as_reading(rows: list[Row]) -> Reading:
    return {str(name): int(value) for name, value in rows}


class PgRevisions:
    def __init__(self, db: PgDatabase) -> None:
        self._db = db
        self._next: asyncio.Future[Reading] | None = None  # the read not sent yet
        self._refreshers: list[Refresher] = []

    def on_request(self, refresher: Refresher) -> None:
        """Call `refresher` with each request's reading, before the request goes on."""
        self._refreshers.append(refresher)

    async def request_started(self) -> None:
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
        task = asyncio.get_running_loop().create_task(self._db.fetch(_READ))

        def settle(done: asyncio.Task[list[Row]]) -> None:
            if future.done():
                return
            if done.cancelled():
                future.cancel()
            elif (exc := done.exception()) is not None:
                future.set_exception(exc)
            else:
                future.set_result(_as_reading(done.result()))

        task.add_done_callback(settle)

    def of(self, name: str) -> int:
        """The counter as this request read it; outside a request, read now."""
        reading = _reading.get()
        if reading is None:
            reading = self.read_blocking()
        return reading.get(name, 0)

    def read_blocking(self) -> Reading:
        return _as_reading(self._db.blocking_fetch(_READ))
