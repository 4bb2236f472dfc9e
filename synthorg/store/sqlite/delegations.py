"""Delegation records in SQLite: reads on the event loop, writes group-committed."""

from __future__ import annotations

import sqlite3
from typing import Any

from synthorg.clock import utc_now
from synthorg.generated.models import V1Task
from synthorg.store.delegations import Delegation, load_task, supersedes
from synthorg.store.sqlite.database import Database
from synthorg.store.task_codec import dumps

_COLUMNS = (
    "id, peer, remote_task_id, context_id, message_id, state, origin_task_id, body, "
    "created_at, updated_at, binding"
)


def _record(row: tuple[Any, ...]) -> Delegation:
    (local_id, peer, remote_id, context_id, message_id, state, origin, body, created, updated,
     binding) = row
    return Delegation(
        local_id, peer, remote_id, context_id, message_id, state, origin, load_task(body),
        created, updated, binding,
    )


class SqliteDelegationStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, record: Delegation) -> None:
        r = record

        def job(conn: sqlite3.Connection) -> None:
            conn.execute(
                f"INSERT INTO delegations ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (r.id, r.peer, r.remote_task_id, r.context_id, r.message_id, r.state,
                 r.origin_task_id, dumps(r.task), r.created_at, r.updated_at, r.binding),
            )

        await self._db.write(job)

    async def update(self, local_id: str, task: V1Task) -> Delegation:
        def job(conn: sqlite3.Connection) -> Delegation:
            # read and written in the one writer's transaction: no update slips in between
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM delegations WHERE id = ?", (local_id,)
            ).fetchone()
            if row is None:
                raise LookupError(f"no delegation {local_id}")
            if not supersedes(load_task(row[7]), task):
                return _record(row)
            conn.execute(
                "UPDATE delegations SET state = ?, body = ?, updated_at = ? WHERE id = ?",
                (task.status.state, dumps(task), utc_now(), local_id),
            )
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM delegations WHERE id = ?", (local_id,)
            ).fetchone()
            return _record(row)

        return await self._db.write(job)

    async def get(self, local_id: str) -> Delegation | None:
        return self._one("id = ?", local_id)

    async def by_origin(self, origin_task_id: str) -> Delegation | None:
        return self._one("origin_task_id = ?", origin_task_id)

    async def by_remote(self, peer: str, remote_task_id: str) -> Delegation | None:
        row = self._db.query_one(
            f"SELECT {_COLUMNS} FROM delegations WHERE peer = ? AND remote_task_id = ? "
            "ORDER BY created_at DESC LIMIT 1",
            (peer, remote_task_id),
        )
        return None if row is None else _record(row)

    async def recent(self, limit: int = 100) -> list[Delegation]:
        rows = self._db.query(
            f"SELECT {_COLUMNS} FROM delegations ORDER BY created_at DESC, id LIMIT ?", (limit,)
        )
        return [_record(row) for row in rows]

    def _one(self, where: str, value: str) -> Delegation | None:
        row = self._db.query_one(
            f"SELECT {_COLUMNS} FROM delegations WHERE {where} ORDER BY created_at DESC LIMIT 1",
            (value,),
        )
        return None if row is None else _record(row)
