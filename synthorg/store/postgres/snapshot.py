"""A table kept in memory as of a revision, reloaded when the revision moves.

The catalog and the settings are small and read on every request, synchronously (the gate
and the settings accessors are plain functions). Each is one snapshot: its rows and the
revision they were read at, in one statement, so the two always agree. A request's reading
reloads it on the event loop before the gate runs; outside a request a stale snapshot is
reloaded from a blocking caller's thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

from synthorg.store.postgres.database import PgDatabase, Row
from synthorg.store.postgres.listener import Reading
from synthorg.store.postgres.revisions import PgRevisions

T = TypeVar("T")


class Snapshot(Generic[T]):
    def __init__(self, db: PgDatabase, revisions: PgRevisions, name: str, sql: str,
                 build: Callable[[list[Row]], T]) -> None:
        """`sql` returns the revision as its first column on every row; a table without rows
        still yields one row (a LEFT JOIN from `revisions`), whose other columns are NULL."""
        self._db = db
        self._revisions = revisions
        self._name = name
        self._sql = sql
        self._build = build
        self.revision = -1  # nothing loaded
        self.value: T | None = None
        self._loading: asyncio.Future[None] | None = None
        revisions.on_request(self.refresh)

    def stale(self) -> None:
        """Written by this process: reload at the next use."""
        self.revision = -1

    async def refresh(self, reading: Reading) -> None:
        if self.revision >= reading.get(self._name, 0):
            return
        loading = self._loading
        if loading is None:  # one reload however many requests found it stale
            loading = self._loading = asyncio.get_running_loop().create_future()
            try:
                self._install(await self._db.fetch(self._sql))
                loading.set_result(None)
            except BaseException as exc:
                loading.set_exception(exc)
                loading.exception()  # retrieved: the waiters re-raise it
                raise
            finally:
                self._loading = None
            return
        await asyncio.shield(loading)

    def current(self) -> T:
        """The snapshot, reloaded first if it is older than this request's reading (or,
        outside a request, than the store now)."""
        if self.value is None or self.revision < self._revisions.of(self._name):
            self._install(self._db.blocking_fetch(self._sql))
        assert self.value is not None
        return self.value

    def _install(self, rows: list[Row]) -> None:
        revision = int(rows[0][0]) if rows else 0
        self.value = self._build([row for row in rows if row[1] is not None])
        self.revision = revision
