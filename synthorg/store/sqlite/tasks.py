"""Tasks and idempotency keys in SQLite: reads on the event loop, writes group-committed."""

from __future__ import annotations

import sqlite3
from collections import OrderedDict

from synthorg.clock import new_id, utc_now
from synthorg.errors import TaskNotFound, VersionConflict
from synthorg.generated.models import Message, Task, TaskStatus, TextPart
from synthorg.store.sqlite.database import Database
from synthorg.store.tasks import (
    RESTART_MESSAGE,
    UNFINISHED_STATES,
    KeyRecorded,
    MessageKey,
    StoredTask,
)


def _dumps(task: Task) -> str:
    return task.model_dump_json(by_alias=True, exclude_none=True)


def _loads(body: str) -> Task:
    return Task.model_validate_json(body)


class SqliteTaskStore:
    def __init__(self, db: Database) -> None:
        self._db = db
        # Tasks already read, by (peer, id): validating a stored body costs more than the
        # rest of a read, and a version that has not moved means the body has not either.
        self._read = TaskCache()

    async def get(self, peer: str, task_id: str) -> StoredTask | None:
        row = self._db.query_one(
            "SELECT body, version FROM tasks WHERE id = ? AND peer = ?", (task_id, peer)
        )
        if row is None:
            return None
        body, version = row
        cached = self._read.get((peer, task_id), version)
        if cached is not None:
            return cached
        stored = StoredTask(_loads(body), version)
        self._read.put((peer, task_id), stored, len(body))
        return stored

    async def message_key(self, peer: str, message_id: str) -> MessageKey | None:
        row = self._db.query_one(
            "SELECT digest, task_id FROM message_keys WHERE peer = ? AND message_id = ?",
            (peer, message_id),
        )
        return None if row is None else MessageKey(message_id, row[0], row[1])

    async def create(self, peer: str, key: MessageKey, task: Task) -> StoredTask:
        body, now = _dumps(task), utc_now()

        def job(conn: sqlite3.Connection) -> StoredTask:
            _insert_key(conn, peer, key, task.id)
            conn.execute(
                "INSERT INTO tasks (id, peer, context_id, state, body, created_at, updated_at, "
                "version) VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
                (task.id, peer, task.contextId, task.status.state, body, now, now),
            )
            return StoredTask(task, 0)

        stored = await self._db.write(job)
        self._read.put((peer, task.id), stored, len(body))
        return stored

    async def update(
        self, peer: str, task: Task, version: int, key: MessageKey | None = None
    ) -> StoredTask:
        body, now = _dumps(task), utc_now()

        def job(conn: sqlite3.Connection) -> StoredTask:
            if key is not None:
                _insert_key(conn, peer, key, task.id)
            changed = conn.execute(
                "UPDATE tasks SET body = ?, state = ?, updated_at = ?, version = version + 1 "
                "WHERE id = ? AND peer = ? AND version = ?",
                (body, task.status.state, now, task.id, peer, version),
            ).rowcount
            if not changed:
                found = conn.execute(
                    "SELECT 1 FROM tasks WHERE id = ? AND peer = ?", (task.id, peer)
                ).fetchone()
                raise VersionConflict() if found else TaskNotFound()
            return StoredTask(task, version + 1)

        stored = await self._db.write(job)
        self._read.put((peer, task.id), stored, len(body))
        return stored

    async def recover(self, now_iso: str) -> int:
        def job(conn: sqlite3.Connection) -> int:
            marks = ", ".join("?" for _ in UNFINISHED_STATES)
            rows = conn.execute(
                f"SELECT id, peer, body FROM tasks WHERE state IN ({marks})", UNFINISHED_STATES
            ).fetchall()
            for task_id, peer, body in rows:
                failed = _restart_failure(_loads(body), now_iso)
                conn.execute(
                    "UPDATE tasks SET body = ?, state = 'failed', updated_at = ?, "
                    "version = version + 1 WHERE id = ? AND peer = ?",
                    (_dumps(failed), now_iso, task_id, peer),
                )
            return len(rows)

        return self._db.write_blocking(job)

    # Last, so the annotations above resolve `list` to the builtin, not this method.
    async def list(self, peer: str | None = None, limit: int = 100) -> list[Task]:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        where, params = ("WHERE peer = ?", (peer,)) if peer is not None else ("", ())
        rows = self._db.query(
            f"SELECT body FROM tasks {where} ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (*params, limit),
        )
        return [_loads(row[0]) for row in rows]


class TaskCache:
    """Validated tasks by (peer, id) and version, least recently used first out, bounded by
    the size of their stored bodies."""

    def __init__(self, max_bytes: int = 16 * 1024 * 1024) -> None:
        self._max_bytes = max_bytes
        self._bytes = 0
        self._entries: OrderedDict[tuple[str, str], tuple[StoredTask, int]] = OrderedDict()

    def get(self, key: tuple[str, str], version: int) -> StoredTask | None:
        entry = self._entries.get(key)
        if entry is None or entry[0].version != version:
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def put(self, key: tuple[str, str], stored: StoredTask, size: int) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        if size > self._max_bytes // 4:
            return  # one huge task would push out everything else
        self._entries[key] = (stored, size)
        self._bytes += size
        while self._bytes > self._max_bytes:
            _, (_, dropped) = self._entries.popitem(last=False)
            self._bytes -= dropped


def _restart_failure(task: Task, now_iso: str) -> Task:
    message = Message(
        kind="message",
        role="agent",
        messageId=new_id(),
        parts=[TextPart(kind="text", text=RESTART_MESSAGE)],
        taskId=task.id,
        contextId=task.contextId,
    )
    return task.model_copy(
        update={"status": TaskStatus(state="failed", message=message, timestamp=now_iso)}
    )


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
