"""Tasks and idempotency keys in SQLite: reads on the event loop, writes group-committed."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence

from synthorg.clock import utc_now
from synthorg.errors import TaskNotFound, VersionConflict
from synthorg.generated.constants import TASK_STATE_FAILED
from synthorg.generated.models import V1Task
from synthorg.store.sqlite.database import Database
from synthorg.store.task_codec import TaskCache, dumps, final_event, loads, restart_failure
from synthorg.store.tasks import (
    UNFINISHED_STATES,
    KeyRecorded,
    LoggedEvent,
    MessageKey,
    Runner,
    StoredTask,
    TaskFilter,
    TaskPageRows,
    event_seq,
)

_GET = (
    "SELECT version, CASE WHEN version = ? THEN NULL ELSE body END FROM tasks "
    "WHERE id = ? AND peer = ?"
)


class SqliteTaskStore:
    def __init__(self, db: Database, runner: Runner | None = None) -> None:
        self._db = db
        self.runner = runner or Runner()
        # Tasks already read, by (peer, id): validating a stored body costs more than the
        # rest of a read, and a version that has not moved means the body has not either.
        self._read = TaskCache()

    async def get(self, peer: str, task_id: str) -> StoredTask | None:
        cache_key = (peer, task_id)
        # One statement, so the version and the body are of the same row: the body only when
        # the version is not the one cached (reading and decoding it would be for nothing).
        row = self._db.query_one(_GET, (self._read.version_of(cache_key), task_id, peer))
        if row is None:
            return None
        version, body = row
        if body is None:
            cached = self._read.get(cache_key, version)
            if cached is not None:
                return cached
            row = self._db.query_one(_GET, (-1, task_id, peer))  # not cached after all
            if row is None:
                return None
            version, body = row
        stored = StoredTask(loads(body), version)
        self._read.put(cache_key, stored, len(body))
        return stored

    async def message_key(self, peer: str, message_id: str) -> MessageKey | None:
        row = self._db.query_one(
            "SELECT digest, task_id FROM message_keys WHERE peer = ? AND message_id = ?",
            (peer, message_id),
        )
        return None if row is None else MessageKey(message_id, row[0], row[1])

    async def create(
        self, peer: str, key: MessageKey, task: V1Task, events: Sequence[str] = (),
        *, body: str | None = None,
    ) -> StoredTask:
        body, now, runner = body or dumps(task), utc_now(), self.runner.id
        state, logged = task.status.state, list(events)

        def job(conn: sqlite3.Connection) -> StoredTask:
            _insert_key(conn, peer, key, task.id)
            conn.execute(
                "INSERT INTO tasks (id, peer, context_id, state, body, created_at, updated_at, "
                "version, runner) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)",
                (task.id, peer, task.contextId, state, body, now, now, runner),
            )
            _log(conn, peer, task.id, 0, logged)
            return StoredTask(task, 0)

        stored = await self._db.write(job)
        return stored

    async def update(
        self,
        peer: str,
        task: V1Task,
        version: int,
        key: MessageKey | None = None,
        events: Sequence[str] = (),
    ) -> StoredTask:
        body, now, runner = dumps(task), utc_now(), self.runner.id
        state, logged = task.status.state, list(events)

        def job(conn: sqlite3.Connection) -> StoredTask:
            if key is not None:
                _insert_key(conn, peer, key, task.id)
            changed = conn.execute(
                "UPDATE tasks SET body = ?, state = ?, updated_at = ?, version = version + 1, "
                "runner = ? WHERE id = ? AND peer = ? AND version = ?",
                (body, state, now, runner, task.id, peer, version),
            ).rowcount
            if not changed:
                found = conn.execute(
                    "SELECT 1 FROM tasks WHERE id = ? AND peer = ?", (task.id, peer)
                ).fetchone()
                raise VersionConflict() if found else TaskNotFound()
            _log(conn, peer, task.id, version + 1, logged)
            return StoredTask(task, version + 1)

        stored = await self._db.write(job)
        return stored

    async def heartbeat(self) -> None:
        runner = self.runner.id

        def job(conn: sqlite3.Connection) -> None:
            now = time.time()
            conn.execute(
                "INSERT INTO runners (id, started_at, heartbeat_at) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
                (runner, now, now),
            )

        await self._db.write(job)

    async def retire(self) -> None:
        runner = self.runner.id
        await self._db.write(lambda conn: conn.execute(
            "DELETE FROM runners WHERE id = ?", (runner,)
        ))

    async def adopt(
        self, resumable: Callable[[V1Task], bool], *, others_gone: bool = False
    ) -> list[tuple[str, StoredTask]]:
        runner = self.runner.id

        def job(conn: sqlite3.Connection) -> list[tuple[str, StoredTask]]:
            taken = []
            for task_id, peer, body, version in self._orphans(conn, others_gone):
                task = loads(body)
                if resumable(task):
                    conn.execute("UPDATE tasks SET runner = ? WHERE id = ? AND peer = ?",
                                 (runner, task_id, peer))
                    taken.append((peer, StoredTask(task, version)))
            return taken

        return await self._db.write(job)

    def _orphans(
        self, conn: sqlite3.Connection, others_gone: bool
    ) -> list[tuple[str, str, str, int]]:
        """Forget the runners that are gone; the unfinished tasks they left."""
        runner, lease = self.runner.id, self.runner.lease_seconds
        # A runner is live while its lease holds; this one always is.
        if others_gone:
            conn.execute("DELETE FROM runners WHERE id != ?", (runner,))
        else:
            conn.execute("DELETE FROM runners WHERE id != ? AND heartbeat_at < ?",
                         (runner, time.time() - lease))
        marks = ", ".join("?" for _ in UNFINISHED_STATES)
        return list(conn.execute(
            f"SELECT id, peer, body, version FROM tasks WHERE state IN ({marks}) "
            "AND (runner IS NULL OR (runner != ? AND runner NOT IN (SELECT id FROM runners)))",
            (*UNFINISHED_STATES, runner),
        ).fetchall())

    async def recover(self, now_iso: str, *, others_gone: bool = False) -> int:
        def job(conn: sqlite3.Connection) -> int:
            rows = self._orphans(conn, others_gone)
            for task_id, peer, body, version in rows:
                failed = restart_failure(loads(body), now_iso)
                conn.execute(
                    "UPDATE tasks SET body = ?, state = ?, updated_at = ?, "
                    "version = version + 1 WHERE id = ? AND peer = ?",
                    (dumps(failed), TASK_STATE_FAILED, now_iso, task_id, peer),
                )
                _log(conn, peer, task_id, version + 1, [final_event(failed)])
            return len(rows)

        return await self._db.write(job)

    async def events_after(
        self, peer: str, task_id: str, after: int, limit: int
    ) -> list[LoggedEvent]:
        rows = self._db.query(
            "SELECT seq, body FROM task_events WHERE task_id = ? AND peer = ? AND seq > ? "
            "ORDER BY seq LIMIT ?",
            (task_id, peer, after, limit),
        )
        return [LoggedEvent(seq, body) for seq, body in rows]

    async def live_runners(self) -> int:
        rows = self._db.query(
            "SELECT count(*) FROM runners WHERE id != ? AND heartbeat_at >= ?",
            (self.runner.id, time.time() - self.runner.lease_seconds),
        )
        return int(rows[0][0])

    async def count_by_state(self) -> dict[str, int]:
        rows = self._db.query("SELECT state, count(*) FROM tasks GROUP BY state")
        return {str(state): int(count) for state, count in rows}

    # Last, so the annotations above resolve `list` to the builtin, not this method.
    async def list(self, peer: str | None = None, limit: int = 100) -> list[V1Task]:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        where, params = ("WHERE peer = ?", (peer,)) if peer is not None else ("", ())
        rows = self._db.query(
            f"SELECT body FROM tasks {where} ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (*params, limit),
        )
        return [loads(row[0]) for row in rows]


    async def page(
        self, peer: str, where: TaskFilter, before: int | None, limit: int
    ) -> TaskPageRows:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        clauses, params = ["peer = ?"], [peer]
        for column, value in (
            ("context_id = ?", where.context_id),
            ("state = ?", where.state),
            ("updated_at >= ?", where.updated_since),
        ):
            if value is not None:
                clauses.append(column)
                params.append(value)
        condition = " AND ".join(clauses)
        total = self._db.query_one(f"SELECT count(*) FROM tasks WHERE {condition}", params)
        if before is not None:
            condition += " AND rowid < ?"
        rows = self._db.query(
            f"SELECT rowid, body FROM tasks WHERE {condition} ORDER BY rowid DESC LIMIT ?",
            (*params, *([before] if before is not None else []), limit),
        )
        return TaskPageRows([(row[0], loads(row[1])) for row in rows], total[0] if total else 0)


def _insert_key(conn: sqlite3.Connection, peer: str, key: MessageKey, task_id: str) -> None:
    inserted = conn.execute(
        "INSERT INTO message_keys (peer, message_id, digest, task_id) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (peer, message_id) DO NOTHING",
        (peer, key.message_id, key.digest, task_id),
    ).rowcount
    if not inserted:
        row = conn.execute(
            "SELECT digest, task_id FROM message_keys WHERE peer = ? AND message_id = ?",
            (peer, key.message_id),
        ).fetchone()
        raise KeyRecorded(MessageKey(key.message_id, row[0], row[1]))


def _log(
    conn: sqlite3.Connection, peer: str, task_id: str, version: int, events: Sequence[str]
) -> None:
    if events:
        conn.executemany(
            "INSERT INTO task_events (task_id, seq, peer, body) VALUES (?, ?, ?, ?)",
            [(task_id, event_seq(version, i), peer, body) for i, body in enumerate(events)],
        )
