"""One process's handle on the shared PostgreSQL database (asyncpg).

- Queries on the event loop go through a small pool of its own: a connection is taken from a
  list and put back, with no round trip (asyncpg's own pool resets every connection it takes
  back, one more round trip per query, which doubled the client's CPU per query here).
  Connections open lazily, on the loop that asks, up to `pool_size`; a caller waits for a
  free one at most `connect_timeout`.
- Every wait is bounded: opening a connection (`connect_timeout`), waiting for one, and each
  statement (`statement_timeout` on the server, and a little more on the client, which holds
  when the server stops answering at all). A request never hangs on the database.
- A failure that means "the database is not there" (refused, lost, timed out, shut down)
  becomes StoreUnavailable and the event `store.unavailable`, once per outage; the first
  query that succeeds again emits `store.available`. A lost connection is dropped, a fresh
  one opened at the next use: the node recovers by itself.
- `blocking` runs a coroutine on a thread of its own, with its own connection, for callers
  that are not coroutines (the CLI, the admin service, start-up): the caller waits at most
  the same bounds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg

from synthorg.errors import StoreUnavailable
from synthorg.observability.events import store as events
from synthorg.observability.log import emit
from synthorg.store.postgres.options import PgOptions

T = TypeVar("T")
Connection = asyncpg.Connection
Row = asyncpg.Record

# Failures that say the database is unreachable, gone or too slow, not that a statement is
# wrong: connection errors (class 08), operator intervention (57: shutdown, canceled by the
# statement timeout), insufficient resources (53: too many connections), a closed connection.
_UNAVAILABLE: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.exceptions.InsufficientResourcesError,
    asyncpg.InterfaceError,
)


def unavailable(exc: BaseException) -> bool:
    return isinstance(exc, _UNAVAILABLE)


def reason(exc: BaseException, options: PgOptions | None = None) -> str:
    """A short cause for events and messages, in an operator's words: which database is
    missing, which address does not answer. Built from the URL's database, user, host and
    port (never its password) and the server's SQLSTATE; never the exception's text (it
    could quote the URL). What is not recognised is named by type and SQLSTATE."""
    state = getattr(exc, "sqlstate", None)
    target = options.target() if options is not None else None
    if state == "3D000":
        if target is None:
            return "no such database"
        return f"database {json.dumps(target.database)} does not exist"
    if state in ("28P01", "28000"):
        who = f" for user {target.user!r}" if target and target.user else ""
        return f"authentication failed{who} (check SYNTHORG_DATABASE_URL)"
    if state in ("57P03", "57P01"):
        return "the database server is starting up or shutting down"
    if state in ("53300", "53000"):
        return "the database server has no free connection slots"
    where = target.address if target else "the database server"
    if isinstance(exc, ConnectionRefusedError) or (
        isinstance(exc, OSError) and "refused" in str(exc).lower()
    ):
        return f"cannot connect to {where} (connection refused)"
    if isinstance(exc, TimeoutError):
        return f"cannot connect to {where} in time, or it did not answer"
    if isinstance(exc, socket.gaierror):
        return f"cannot connect to {where} (the host name does not resolve)"
    if isinstance(exc, OSError) and not isinstance(exc, TimeoutError):
        return f"cannot connect to {where} ({exc.strerror or type(exc).__name__})"
    return type(exc).__name__ + (f" ({state})" if state else "")


class Health:
    """Whether the database answers, as this process last saw it; events on each change."""

    def __init__(self) -> None:
        self.down = False
        self._lock = threading.Lock()  # the blocking side reports from its own thread

    def failed(self, exc: BaseException, during: str,
               options: PgOptions | None = None) -> StoreUnavailable:
        with self._lock:
            first, self.down = not self.down, True
        cause = reason(exc, options)
        if first:
            emit(events.UNAVAILABLE, level="error", reason=cause, during=during)
        return StoreUnavailable(f"the database is unavailable: {cause}")

    def answered(self) -> None:
        with self._lock:
            was, self.down = self.down, False
        if was:
            emit(events.AVAILABLE)


class Pool:
    """Connections for the loop that uses them; see the module's docstring."""

    def __init__(self, options: PgOptions, size: int) -> None:
        self._options = options
        self._size = size
        self._loop: asyncio.AbstractEventLoop | None = None
        self._idle: list[Connection] = []
        self._open = 0  # open or opening
        self._waiters: deque[asyncio.Future[Connection | None]] = deque()

    async def acquire(self) -> Connection:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._abandon()  # a connection belongs to the loop that opened it
            self._loop = loop
        idle = self._idle
        while idle:
            conn = idle.pop()
            if not conn.is_closed():
                return conn
            self._open -= 1
        if self._open < self._size:
            return await self._connect()
        waiter: asyncio.Future[Connection | None] = loop.create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(self._options.connect_timeout):
                got = await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                handed = waiter.result()
                if handed is not None:
                    self.release(handed)
                else:
                    self._slot_freed()
            else:
                waiter.cancel()
            raise
        return got if got is not None else await self._connect()

    async def _connect(self) -> Connection:
        self._open += 1
        options = self._options
        try:
            conn: Connection = await asyncpg.connect(
                options.url,
                timeout=options.connect_timeout,
                command_timeout=options.command_timeout,
                server_settings=options.server_settings,
            )
        except BaseException:
            self._open -= 1
            self._slot_freed()
            raise
        return conn

    def release(self, conn: Connection) -> None:
        if conn.is_closed() or conn.is_in_transaction():
            if not conn.is_closed():
                conn.terminate()
            self._open -= 1
            self._slot_freed()
            return
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        self._idle.append(conn)

    def discard(self, conn: Connection) -> None:
        """Drop a connection in an unknown state (its query was interrupted)."""
        with contextlib.suppress(Exception):
            conn.terminate()
        self.release(conn)

    def _slot_freed(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # it opens a connection of its own
                return

    def _abandon(self) -> None:
        for conn in self._idle:
            with contextlib.suppress(Exception):
                conn.terminate()
        self._idle.clear()
        self._open = 0
        self._waiters.clear()

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 2.0)
        self._open -= len(idle)

    def terminate(self) -> None:
        self._abandon()


class PgDatabase:
    """Queries on the running event loop, mapped to the node's errors; see the docstring."""

    def __init__(self, options: PgOptions, health: Health | None = None,
                 pool_size: int | None = None) -> None:
        self.options = options
        self.health = health or Health()
        self._pool = Pool(options, pool_size or options.pool_size)
        self._blocking: _BlockingSide | None = None
        self._blocking_lock = threading.Lock()

    def __repr__(self) -> str:
        return "PgDatabase(<url redacted>)"

    async def _acquire(self, during: str) -> Connection:
        try:
            return await self._pool.acquire()
        except Exception as exc:
            raise self.health.failed(exc, during, self.options) from None

    async def run(self, job: Callable[[Connection], Awaitable[T]], during: str = "query") -> T:
        """`job` on a pooled connection; its failures to reach the database become
        StoreUnavailable, every other error is raised as it is."""
        conn = await self._acquire(during)
        try:
            result = await job(conn)
        except asyncio.CancelledError:
            self._pool.discard(conn)
            raise
        except Exception as exc:
            self._pool.release(conn)
            if unavailable(exc):
                raise self.health.failed(exc, during, self.options) from None
            raise
        self._pool.release(conn)
        if self.health.down:
            self.health.answered()
        return result

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        conn = await self._acquire("query")
        try:
            row: Row | None = await conn.fetchrow(sql, *args)
        except asyncio.CancelledError:
            self._pool.discard(conn)
            raise
        except Exception as exc:
            self._pool.release(conn)
            if unavailable(exc):
                raise self.health.failed(exc, "query", self.options) from None
            raise
        self._pool.release(conn)
        if self.health.down:
            self.health.answered()
        return row

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        return await self.run(lambda conn: conn.fetch(sql, *args))

    async def execute(self, sql: str, *args: Any) -> str:
        return await self.run(lambda conn: conn.execute(sql, *args))

    async def transaction(self, job: Callable[[Connection], Awaitable[T]],
                          during: str = "write") -> T:
        async def in_transaction(conn: Connection) -> T:
            async with conn.transaction():
                return await job(conn)

        return await self.run(in_transaction, during)

    # -- callers that are not coroutines ----------------------------------------------------

    def blocking(self, job: Callable[[PgDatabase], Awaitable[T]]) -> T:
        """Run `job` with a database of its own on a private thread, and wait for it."""
        with self._blocking_lock:
            if self._blocking is None:
                self._blocking = _BlockingSide(PgDatabase(self.options, self.health, 2))
            side = self._blocking
        return side.run(job)

    def blocking_fetch(self, sql: str, *args: Any) -> list[Row]:
        return self.blocking(lambda db: db.fetch(sql, *args))

    async def aclose(self) -> None:
        await self._pool.close()

    def close(self) -> None:
        """Close what can be closed from here (the blocking side's thread and connection;
        the loop's connections are dropped, the server ends them)."""
        with self._blocking_lock:
            side, self._blocking = self._blocking, None
        if side is not None:
            side.stop()
        self._pool.terminate()


class _BlockingSide:
    """A thread with its own event loop, where blocking callers' coroutines run."""

    def __init__(self, db: PgDatabase) -> None:
        self.db = db
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="synthorg-store-blocking")
        self._thread.start()

    def run(self, job: Callable[[PgDatabase], Awaitable[T]]) -> T:
        if threading.current_thread() is self._thread:
            raise RuntimeError("a blocking store call from the store's own thread")

        async def call() -> T:
            return await job(self.db)

        future = asyncio.run_coroutine_threadsafe(call(), self._loop)
        options = self.db.options
        # Room for a connection, a wait for it and a few statements; each is bounded below.
        bound = 2 * options.connect_timeout + 4 * options.command_timeout
        try:
            return future.result(timeout=bound)
        except TimeoutError:
            future.cancel()
            raise self.db.health.failed(TimeoutError(), "blocking call", self.db.options) from None

    def stop(self) -> None:
        async def close() -> None:
            await self.db.aclose()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=3)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=3)
        if not self._thread.is_alive():
            self._loop.close()
