"""One process's handle on the node's SQLite file: reads and group-committed writes, on the
event loop, with no thread hop per call.

- Reads run on a reader connection, right where they are asked: in WAL mode a reader never
  waits for a writer, and a primary-key lookup costs microseconds, less than a hop to a
  worker thread and back.
- Writes are jobs (a function of the writer connection). Jobs queued while the loop is busy
  are committed together in one transaction; a job that fails having written nothing does
  not touch the others, and when one fails having written something the batch is rolled
  back and run again with each job in its own savepoint (see `_run`). Every caller is
  answered after that commit, so "acknowledged" keeps meaning "committed".
  `BEGIN IMMEDIATE` is tried without waiting: when another process holds the write lock,
  the batch waits on the event loop (asyncio.sleep with backoff), never blocking it, up to
  `BUSY_TIMEOUT`.
- WAL checkpoints (the one step that fsyncs) run on a worker thread every
  `CHECKPOINT_EVERY` jobs committed, off the request path: a passive one copies the bulk
  while writes go on, then writes are held for a short restarting one that copies the
  rest, so the next write starts the WAL from its beginning. Without that last step, under
  steady load the WAL would never be caught up and would grow without end. Writes are also
  held when a whole period passes while a checkpoint still runs, so the WAL stays within
  about two periods however slowly the checkpoint's thread is scheduled.
- Checkpoints are small because each one competes with the event loop for the CPU.
  Counted in commits, under group commit 500 commits were 16,000 jobs and a 200 MiB WAL,
  whose passive checkpoint slowed every batch beside it for a quarter of a second; every
  100 jobs, the message/send bench's p99 fell from 3.8x its mean latency to 1.7x.
- The restarting checkpoint waits for readers in steps of 1-2 ms for at most
  `RESTART_PATIENCE`, not with SQLite's busy handler, whose sleeps grow to 50-100 ms while
  every write is held. When it cannot finish, writes go on and the next checkpoint tries
  again; after `MAX_SHORT_RESTARTS` misses in a row one waits as long as it takes, so the
  WAL stays bounded.

`write_blocking` is the plain path for the CLI and for start-up: one job, one transaction,
waiting on the lock with SQLite's own busy timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from synthorg.errors import StoreError
from synthorg.store.private_file import ensure_private_dir, ensure_private_file
from synthorg.store.sqlite.schema import migrate

T = TypeVar("T")
Row = tuple[Any, ...]
Job = Callable[[sqlite3.Connection], Any]

DB_FILENAME = "synthorg.db"
BUSY_TIMEOUT = 5.0  # seconds a write waits for another process's write lock
READ_BUSY_TIMEOUT_MS = 2000  # a reader waits only while a crashed writer's WAL is recovered
CHECKPOINT_EVERY = 100  # jobs committed between checkpoints (a commit carries one or many)
RESTART_PATIENCE = 0.02  # seconds a restarting checkpoint waits for readers, writes held
MAX_SHORT_RESTARTS = 3  # restarts cut short in a row before one waits as long as it takes
WAL_SIZE_LIMIT = 32 * 1024 * 1024
_FIRST_BACKOFF, _MAX_BACKOFF = 0.0005, 0.01
_MAX_RESTART_STEP = 0.002


def _connect(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
    )
    conn.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
    conn.execute("PRAGMA journal_mode=WAL")
    # In WAL mode NORMAL loses nothing on a process crash (kill -9), only on power loss.
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


class _Pending:
    __slots__ = ("future", "job")

    def __init__(self, job: Job, future: asyncio.Future[Any]) -> None:
        self.job, self.future = job, future


class Database:
    """The node's SQLite file for one process. Use it from one thread (the event loop's)."""

    def __init__(self, path: Path, *, migrate_now: bool = True) -> None:
        self.path = path
        self.reader = _connect(path, READ_BUSY_TIMEOUT_MS)
        self.writer = _connect(path, int(BUSY_TIMEOUT * 1000))
        self._pending: list[_Pending] = []
        self._flushing = False
        self._jobs = 0  # jobs committed since the last checkpoint started
        self.checkpoint_every = CHECKPOINT_EVERY
        self._short_restarts = 0  # restarting checkpoints cut short in a row
        self._checkpointing = False
        self._held = False  # writes wait while a checkpoint restarts the WAL
        self._checkpoint_task: asyncio.Task[None] | None = None
        self.migrated_from: int | None = None  # the version found, when migrated at open
        try:
            if migrate_now:
                self.migrated_from = self.write_blocking(migrate)
        except BaseException:
            self.close()
            raise
        # From here on the writer never waits inside SQLite: a busy lock is waited out on the
        # event loop (write) or by write_blocking, which raises the timeout for its one job.
        self.writer.execute("PRAGMA busy_timeout=0")
        self.writer.execute("PRAGMA wal_autocheckpoint=0")
        # Once a checkpoint has emptied the WAL, the next write shrinks the file back to this.
        self.writer.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")

    # -- reads --------------------------------------------------------------------------

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self.reader.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        # fetchall, not fetchone: a statement left unfinished keeps its read transaction
        # open, and an open reader stops every checkpoint from emptying the WAL.
        rows = self.reader.execute(sql, params).fetchall()
        return rows[0] if rows else None

    # -- writes -------------------------------------------------------------------------

    async def write(self, job: Callable[[sqlite3.Connection], T]) -> T:
        """Run `job` in the next group commit; returns its result once committed. A job may
        run twice (its batch retried, see `_run`), only the last run committed: it must act
        on the connection only."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._pending.append(_Pending(job, future))
        if not self._flushing and not self._held:
            self._flushing = True
            loop.call_soon(self._flush)
        return await future

    def write_blocking(self, job: Callable[[sqlite3.Connection], T]) -> T:
        """One job in its own transaction, waiting up to BUSY_TIMEOUT for the write lock."""
        conn = self.writer
        conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = job(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        finally:
            conn.execute("PRAGMA busy_timeout=0")
        self._committed(1)
        return result

    def _flush(self) -> None:
        if self._held:
            self._flushing = False  # picked up again when the checkpoint lets go
            return
        batch, self._pending = self._pending, []
        if self._try_begin(batch):
            if self._run(batch):
                self._next()
        elif batch:
            asyncio.get_running_loop().create_task(self._flush_when_free(batch))
        else:
            self._next()

    async def _flush_when_free(self, batch: list[_Pending], careful: bool = False) -> None:
        deadline = time.monotonic() + BUSY_TIMEOUT
        delay = _FIRST_BACKOFF
        while True:
            await asyncio.sleep(delay)
            if self._try_begin(batch):
                if not self._run(batch, careful):
                    return  # it goes on as a careful batch, which moves on when done
                break
            if not batch:  # failed as a whole (see _try_begin)
                break
            if time.monotonic() > deadline:
                _fail(batch, StoreError("the database stayed locked by another writer"))
                break
            delay = min(delay * 2, _MAX_BACKOFF)
        self._next()

    def _next(self) -> None:
        if self._pending and not self._held:
            asyncio.get_running_loop().call_soon(self._flush)
        else:
            self._flushing = False

    def _try_begin(self, batch: list[_Pending]) -> bool:
        """BEGIN IMMEDIATE without waiting; False when another process holds the lock."""
        if not batch:
            return False
        try:
            self.writer.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
                return False
            _fail(batch, _store_error(exc))
            batch.clear()
            return False
        return True

    def _run(self, batch: list[_Pending], careful: bool = False) -> bool:
        """Run the batch in the open transaction and answer its callers; False when it was
        rolled back to run again as a careful batch (which answers them then).

        A batch runs first with no savepoint: a job that fails having written nothing
        (a refused key, a version that moved) leaves nothing to undo, so the others commit.
        When one fails having written something, the whole batch is rolled back and run again
        `careful`, each job in its own savepoint, so one job's failure does not touch the
        others. Savepoints are two statements per job, paid only on such a retry."""
        conn = self.writer
        outcomes: list[tuple[_Pending, Any, BaseException | None]] = []
        # A job alone in its batch needs no savepoint: its failure rolls the batch back.
        alone = len(batch) == 1
        careful = careful and not alone
        try:
            for pending in batch:
                if pending.future.done():  # the caller went away: nothing was acknowledged
                    continue
                if careful:
                    conn.execute("SAVEPOINT job")
                changes = conn.total_changes
                try:
                    result = pending.job(conn)
                except Exception as exc:
                    if careful:
                        conn.execute("ROLLBACK TO job")
                        conn.execute("RELEASE job")
                    elif not alone and (
                        isinstance(exc, sqlite3.Error) or conn.total_changes != changes
                    ):
                        self._retry_careful(batch)
                        return False
                    outcomes.append((pending, None, exc))
                else:
                    if careful:
                        conn.execute("RELEASE job")
                    outcomes.append((pending, result, None))
            if alone and outcomes and outcomes[0][2] is not None:
                conn.execute("ROLLBACK")
            else:
                conn.execute("COMMIT")
        except sqlite3.Error as exc:  # e.g. the disk is full: nothing of the batch is kept
            with contextlib.suppress(sqlite3.Error):
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            _fail(batch, _store_error(exc))
            return True
        self._committed(len(outcomes))
        for pending, result, error in outcomes:
            if pending.future.done():
                continue
            if error is None:
                pending.future.set_result(result)
            else:
                pending.future.set_exception(error)
        return True

    def _retry_careful(self, batch: list[_Pending]) -> None:
        """Roll the batch back and run it again, each job in its own savepoint."""
        try:
            self.writer.execute("ROLLBACK")
        except sqlite3.Error as exc:
            _fail(batch, _store_error(exc))
            self._next()
            return
        if self._try_begin(batch):  # the lock was just let go: usually free still
            self._run(batch, careful=True)
            self._next()
        elif batch:
            asyncio.get_running_loop().create_task(self._flush_when_free(batch, careful=True))
        else:
            self._next()

    # -- checkpoints --------------------------------------------------------------------

    def _committed(self, jobs: int) -> None:
        self._jobs += jobs
        if self._jobs < self.checkpoint_every:
            return
        if self._checkpointing:
            # A whole period of jobs while the last checkpoint still runs (a starved
            # worker thread): hold writes until it is done, or the WAL would keep growing.
            self._held = True
            return
        self._jobs = 0
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (the CLI): checkpoint here, it is not a request path
            with contextlib.suppress(sqlite3.Error):
                checkpoint_wal(self.path, "RESTART")
            return
        self._checkpointing = True
        self._checkpoint_task = loop.create_task(self._checkpoint())

    async def _checkpoint(self) -> None:
        try:
            await asyncio.to_thread(checkpoint_wal, self.path, "PASSIVE", 0.0)
            self._held = True
            patient = self._short_restarts >= MAX_SHORT_RESTARTS
            done = await asyncio.to_thread(
                checkpoint_wal, self.path, "RESTART", BUSY_TIMEOUT if patient else RESTART_PATIENCE
            )
            self._short_restarts = 0 if done else self._short_restarts + 1
        except sqlite3.Error:
            pass  # tried again at the next one
        finally:
            self._held = self._checkpointing = False
            if self._pending and not self._flushing:
                self._flushing = True
                asyncio.get_running_loop().call_soon(self._flush)

    def close(self) -> None:
        for conn in (self.reader, self.writer):
            with contextlib.suppress(sqlite3.Error):
                conn.close()


def checkpoint_wal(path: Path, mode: str, patience: float = BUSY_TIMEOUT) -> bool:
    """A checkpoint on a connection of its own; False when it could not finish within
    `patience` seconds. PASSIVE never waits. RESTART waits for other writers and for every
    reader to leave the WAL, then leaves the WAL to be started again from its beginning."""
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    deadline = time.monotonic() + patience
    delay = _FIRST_BACKOFF
    try:
        while True:
            try:
                busy = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()[0]
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                busy = 1
            if not busy:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(delay)  # on the checkpoint's own thread
            delay = min(delay * 2, _MAX_RESTART_STEP)
    finally:
        conn.close()


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in str(exc)


def _store_error(exc: sqlite3.Error) -> StoreError:
    return StoreError(f"the database refused a write ({type(exc).__name__}: {exc})")


def _fail(batch: list[_Pending], error: BaseException) -> None:
    for pending in batch:
        if not pending.future.done():
            pending.future.set_exception(error)


def open_database(data_dir: Path, *, migrate_now: bool = True) -> Database:
    """Open (creating if needed) `data_dir/synthorg.db`, private, migrated to this release."""
    data_dir = Path(data_dir)
    ensure_private_dir(data_dir)
    path = data_dir / DB_FILENAME
    # Create the file 0600 before SQLite does (SQLite would honour the umask, often 0644);
    # SQLite gives the -wal and -shm files the database file's mode.
    ensure_private_file(path)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.chmod(side, 0o600)
    return Database(path, migrate_now=migrate_now)
