"""The change counters as announced: one connection per process LISTENs on the revisions
channel, where the `peers` and `settings` triggers announce each new revision at the writer's
commit (`schema.py`, v11).

`current()` is the latest reading while the connection listens, and None while it does not
(not open yet, lost, or opened on another event loop): the caller then reads the counters
itself. The connection is opened on the loop that asks, and opened again after a loss
(backoff from RETRY_MIN to RETRY_MAX seconds); after each LISTEN the counters are read once
on it, so nothing committed while no one listened is missed. A connection that stops
answering without closing (a silent network) is found by a heartbeat: the counters are read
on it every HEARTBEAT_SECONDS, bounded by HEARTBEAT_TIMEOUT, and a failure drops it. A stale
reading is therefore never served for longer than about the two together.

It needs a session of its own: behind a pooler in transaction mode (PgBouncer's default),
LISTEN does not hold, and the heartbeat alone keeps the counters within a few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable

import asyncpg

from synthorg.observability.events import store as events
from synthorg.observability.log import emit
from synthorg.store.postgres.database import Connection, Row, reason
from synthorg.store.postgres.options import PgOptions
from synthorg.store.postgres.schema import REVISIONS_CHANNEL

Reading = dict[str, int]
APPLICATION_NAME = "synthorg-a2a-revisions"  # how operators (and tests) tell it apart
HEARTBEAT_SECONDS = 1.0
HEARTBEAT_TIMEOUT = 2.0
RETRY_MIN, RETRY_MAX = 0.25, 5.0
_READ = "SELECT name, value FROM revisions"


def as_reading(rows: list[Row]) -> Reading:
    return {str(name): int(value) for name, value in rows}


class RevisionListener:
    def __init__(self, options: PgOptions) -> None:
        self._options = options
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._conn: Connection | None = None
        # The latest counters; replaced, never changed in place, so a request keeps the
        # reading it took. Served only once `_live`: read on the connection after its LISTEN.
        self._latest: Reading = {}
        self._live = False
        self._watchers: list[Callable[[str, int], None]] = []
        self._waiters: list[tuple[bool, asyncio.Future[None]]] = []

    @property
    def listening(self) -> bool:
        conn = self._conn
        return self._live and conn is not None and not conn.is_closed()

    def current(self) -> Reading | None:
        """The counters as last announced, or None when this loop has no listening
        connection (one is then being opened)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._start(loop)
            return None
        conn = self._conn
        if not self._live or conn is None or conn.is_closed():  # closed: not told yet
            if self._task is None or self._task.done():
                self._start(loop)
            return None
        return self._latest

    async def until(self, listening: bool) -> None:
        """Return once the connection listens (or, `listening=False`, once it does not)."""
        if self.listening == listening:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((listening, waiter))
        await waiter

    def _moved(self) -> None:
        listening, waiters = self.listening, self._waiters
        self._waiters = [(want, w) for want, w in waiters if want != listening and not w.done()]
        for want, waiter in waiters:
            if want == listening and not waiter.done():
                waiter.set_result(None)

    def watch(self, callback: Callable[[str, int], None]) -> None:
        """Call `callback(name, revision)` for each change announced to this process."""
        self._watchers.append(callback)

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._drop()  # a connection belongs to the loop that opened it
        self._loop = loop
        # A context of its own: the listener outlives the request that started it.
        self._task = loop.create_task(self._run(), context=contextvars.Context())

    def _drop(self) -> None:
        task, conn = self._task, self._conn
        self._task, self._conn, self._live = None, None, False

        def stop() -> None:  # each may find its loop closed meanwhile: nothing is left then
            if task is not None:
                with contextlib.suppress(Exception):
                    task.cancel()
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.terminate()

        loop = None if task is None else task.get_loop()
        try:
            here = asyncio.get_running_loop() is loop
        except RuntimeError:
            here = False
        if loop is not None and not here and loop.is_running():
            loop.call_soon_threadsafe(stop)  # a connection is only touched from its loop
        else:
            stop()

    def close(self) -> None:
        self._drop()
        self._loop = None

    async def _run(self) -> None:
        delay = RETRY_MIN
        while True:
            if await self._listen_once():
                delay = RETRY_MIN
            await asyncio.sleep(delay)
            delay = min(RETRY_MAX, delay * 2)

    async def _listen_once(self) -> bool:
        """Listen until the connection is lost; True when it did listen."""
        options, conn, listened = self._options, None, False
        try:
            conn = await asyncpg.connect(
                options.url,
                timeout=options.connect_timeout,
                command_timeout=options.command_timeout,
                server_settings={**options.server_settings,
                                 "application_name": APPLICATION_NAME},
            )
            lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def closed(_: object) -> None:
                if not lost.done():
                    lost.set_result(None)
                self._moved()

            conn.add_termination_listener(closed)
            self._conn, self._latest = conn, {}
            await conn.add_listener(REVISIONS_CHANNEL, self._announced)
            self._merge(as_reading(await conn.fetch(_READ)))  # after LISTEN: nothing missed
            self._live = listened = True
            self._moved()
            emit(events.LISTENING)
            while True:
                await asyncio.wait([lost], timeout=HEARTBEAT_SECONDS)
                if lost.done():
                    raise ConnectionError("the listening connection was closed")
                self._merge(as_reading(await conn.fetch(_READ, timeout=HEARTBEAT_TIMEOUT)))
        except Exception as exc:
            if listened:  # said once per loss; a database that is down says so elsewhere
                emit(events.POLLING, level="warning", reason=reason(exc, options),
                     retry_in=RETRY_MIN)
            return listened
        finally:
            if self._conn is conn:
                self._conn, self._live = None, False
                self._moved()
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.terminate()

    def _announced(self, _conn: object, _pid: int, _channel: str, payload: object) -> None:
        name, _, value = str(payload).partition(" ")
        with contextlib.suppress(ValueError):
            self._merge({name: int(value)})
            for callback in self._watchers:
                callback(name, int(value))

    def _merge(self, found: Reading) -> None:
        """Counters only move forward: an announcement overtaken by a read changes nothing."""
        merged = dict(self._latest)
        for name, value in found.items():
            if value > merged.get(name, -1):
                merged[name] = value
        self._latest = merged
