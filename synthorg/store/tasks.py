"""Durable A2A tasks and (peer, messageId) idempotency keys.

`TaskStore` is the seam a PostgreSQL implementation plugs into: callers see only async
methods over plain A2A Task JSON dicts, and every multi-row step is one store call, so
each implementation owns its own transactions.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import uuid
from typing import Any, Protocol

from synthorg.store.db import connection_lock, transaction, utc_now

Task = dict[str, Any]

RESTART_MESSAGE = "the node restarted before this task finished"
_UNFINISHED = ("submitted", "working")
TERMINAL_STATES = frozenset({"completed", "canceled", "failed", "rejected"})


class TaskStore(Protocol):
    async def get(self, peer: str, task_id: str) -> Task | None:
        """The task, or None when missing or owned by another peer (indistinguishable)."""
        ...

    async def create(self, peer: str, message_id: str, digest: str, task: Task) -> tuple[Task, str]:
        """Atomically record (peer, message_id) -> task and the task itself.

        When the key already exists nothing is written and (the key's task, the key's
        digest) is returned; callers compare digests to tell a retry from a reuse."""
        ...

    async def claim_message(
        self, peer: str, message_id: str, digest: str, task_id: str
    ) -> tuple[str, str] | None:
        """Record a continuation's key: None when recorded, else (its task_id, its digest)."""
        ...

    async def get_message_key(self, peer: str, message_id: str) -> tuple[str, str] | None:
        """The (task_id, digest) a message key was recorded with, or None."""
        ...

    async def save(self, peer: str, task: Task) -> Task:
        """Replace the stored JSON of the peer's existing task and return what is stored.

        Terminal states are final: over a terminal task nothing is written and the stored
        task is returned. LookupError if the peer has no such task."""
        ...

    async def recover(self, now_iso: str | None = None) -> int:
        """Fail every task left submitted/working (the node restarted); returns the count."""
        ...

    async def list(self, peer: str | None = None, limit: int = 100) -> list[Task]:
        """Newest first, optionally only one peer's."""
        ...


def _dumps(task: Task) -> str:
    return json.dumps(task, ensure_ascii=False, separators=(",", ":"))


def _columns(task: Task) -> tuple[str, str, str]:
    """(id, contextId, status.state): the fields the table indexes or filters on."""
    try:
        task_id, context_id, state = task["id"], task["contextId"], task["status"]["state"]
    except (KeyError, TypeError):
        raise ValueError("task must have id, contextId and status.state") from None
    if not all(isinstance(value, str) for value in (task_id, context_id, state)):
        raise ValueError("task id, contextId and status.state must be strings")
    return task_id, context_id, state


class SqliteTaskStore:
    """SQLite behind the async interface: each call runs on a worker thread so a write
    waiting on the file lock (busy_timeout) never stalls the event loop."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._lock = connection_lock(conn) or threading.RLock()

    async def get(self, peer: str, task_id: str) -> Task | None:
        return await asyncio.to_thread(self._get, peer, task_id)

    async def create(self, peer: str, message_id: str, digest: str, task: Task) -> tuple[Task, str]:
        return await asyncio.to_thread(self._create, peer, message_id, digest, task)

    async def claim_message(
        self, peer: str, message_id: str, digest: str, task_id: str
    ) -> tuple[str, str] | None:
        return await asyncio.to_thread(self._claim, peer, message_id, digest, task_id)

    async def get_message_key(self, peer: str, message_id: str) -> tuple[str, str] | None:
        return await asyncio.to_thread(self._get_message_key, peer, message_id)

    async def save(self, peer: str, task: Task) -> Task:
        return await asyncio.to_thread(self._save, peer, task)

    async def recover(self, now_iso: str | None = None) -> int:
        return await asyncio.to_thread(self._recover, now_iso or utc_now())

    # -- blocking halves ------------------------------------------------------------------

    def _get_message_key(self, peer: str, message_id: str) -> tuple[str, str] | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT task_id, digest FROM message_keys WHERE peer = ? AND message_id = ?",
                (peer, message_id),
            ).fetchone()
        return (row[0], row[1]) if row else None

    def _get(self, peer: str, task_id: str) -> Task | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT body FROM tasks WHERE id = ? AND peer = ?", (task_id, peer)
            ).fetchone()
        return None if row is None else _loads(row[0])

    def _create(self, peer: str, message_id: str, digest: str, task: Task) -> tuple[Task, str]:
        task_id, context_id, state = _columns(task)
        body = _dumps(task)
        now = utc_now()
        with transaction(self._conn, self._lock) as conn:
            existing = _insert_key(conn, peer, message_id, digest, task_id)
            if existing is not None:
                row = conn.execute(
                    "SELECT body FROM tasks WHERE id = ? AND peer = ?", (existing[0], peer)
                ).fetchone()
                if row is None:  # keys and tasks are written together; this is corruption
                    raise LookupError("a message key refers to a missing task")
                return _loads(row[0]), existing[1]
            conn.execute(
                "INSERT INTO tasks (id, peer, context_id, state, body, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (task_id, peer, context_id, state, body, now, now),
            )
        return task, digest

    def _claim(
        self, peer: str, message_id: str, digest: str, task_id: str
    ) -> tuple[str, str] | None:
        with transaction(self._conn, self._lock) as conn:
            return _insert_key(conn, peer, message_id, digest, task_id)

    def _save(self, peer: str, task: Task) -> Task:
        task_id, _, state = _columns(task)
        with transaction(self._conn, self._lock) as conn:
            row = conn.execute(
                "SELECT state, body FROM tasks WHERE id = ? AND peer = ?", (task_id, peer)
            ).fetchone()
            if row is None:
                raise LookupError("no such task for this peer")
            if row[0] in TERMINAL_STATES:  # final is final, whoever raced us to it
                return _loads(row[1])
            conn.execute(
                "UPDATE tasks SET body = ?, state = ?, updated_at = ? WHERE id = ? AND peer = ?",
                (_dumps(task), state, utc_now(), task_id, peer),
            )
        return task

    def _recover(self, now_iso: str) -> int:
        placeholders = ", ".join("?" for _ in _UNFINISHED)
        with transaction(self._conn, self._lock) as conn:
            rows = conn.execute(
                f"SELECT id, peer, body FROM tasks WHERE state IN ({placeholders})", _UNFINISHED
            ).fetchall()
            for task_id, peer, body in rows:
                task = _loads(body)
                task["status"] = {
                    "state": "failed",
                    "message": {
                        "kind": "message",
                        "role": "agent",
                        "messageId": str(uuid.uuid4()),
                        "parts": [{"kind": "text", "text": RESTART_MESSAGE}],
                        "taskId": task_id,
                        "contextId": task.get("contextId"),
                    },
                    "timestamp": now_iso,
                }
                conn.execute(
                    "UPDATE tasks SET body = ?, state = 'failed', updated_at = ? "
                    "WHERE id = ? AND peer = ?",
                    (_dumps(task), now_iso, task_id, peer),
                )
        return len(rows)

    def _list(self, peer: str | None, limit: int) -> list[Task]:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        where, params = ("WHERE peer = ?", (peer,)) if peer is not None else ("", ())
        with self._lock:
            rows = self._conn.execute(
                f"SELECT body FROM tasks {where} ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [_loads(row[0]) for row in rows]

    # Last, so the annotations above resolve `list` to the builtin, not this method.
    async def list(self, peer: str | None = None, limit: int = 100) -> list[Task]:
        return await asyncio.to_thread(self._list, peer, limit)


def _loads(body: str) -> Task:
    task: Task = json.loads(body)
    return task


def _insert_key(
    conn: sqlite3.Connection, peer: str, message_id: str, digest: str, task_id: str
) -> tuple[str, str] | None:
    """Insert the key inside the caller's transaction; None when inserted, else the
    existing (task_id, digest)."""
    cursor = conn.execute(
        "INSERT INTO message_keys (peer, message_id, digest, task_id) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (peer, message_id) DO NOTHING",
        (peer, message_id, digest, task_id),
    )
    if cursor.rowcount == 1:
        return None
    row = conn.execute(
        "SELECT task_id, digest FROM message_keys WHERE peer = ? AND message_id = ?",
        (peer, message_id),
    ).fetchone()
    return row[0], row[1]
