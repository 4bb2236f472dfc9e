"""Delegation records in PostgreSQL, shared by every replica."""

from __future__ import annotations

from synthorg.clock import utc_now
from synthorg.generated.models import V1Task
from synthorg.store.delegations import Delegation, load_task, supersedes
from synthorg.store.postgres.database import Connection, PgDatabase, Row
from synthorg.store.task_codec import dumps

_COLUMNS = (
    "id, peer, remote_task_id, context_id, message_id, state, origin_task_id, body, "
    "created_at, updated_at, binding"
)


def _record(row: Row) -> Delegation:
    (local_id, peer, remote_id, context_id, message_id, state, origin, body, created, updated,
     binding) = row
    return Delegation(
        local_id, peer, remote_id, context_id, message_id, state, origin, load_task(body),
        created, updated, binding,
    )


class PgDelegationStore:
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def add(self, record: Delegation) -> None:
        r = record
        await self._db.run(lambda conn: conn.execute(
            f"INSERT INTO delegations ({_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, "
            "$10, $11)",
            r.id, r.peer, r.remote_task_id, r.context_id, r.message_id, r.state,
            r.origin_task_id, dumps(r.task), r.created_at, r.updated_at, r.binding,
        ), "write")

    async def update(self, local_id: str, task: V1Task) -> Delegation:
        async def job(conn: Connection) -> Row | None:
            # the row locked while it is compared: a racing update waits, then compares
            # against what this one wrote
            row: Row | None = await conn.fetchrow(
                f"SELECT {_COLUMNS} FROM delegations WHERE id = $1 FOR UPDATE", local_id
            )
            if row is None or not supersedes(load_task(row[7]), task):
                return row
            row = await conn.fetchrow(
                f"UPDATE delegations SET state = $1, body = $2, updated_at = $3 WHERE id = $4 "
                f"RETURNING {_COLUMNS}",
                task.status.state, dumps(task), utc_now(), local_id,
            )
            return row

        row = await self._db.transaction(job, "write")
        if row is None:
            raise LookupError(f"no delegation {local_id}")
        return _record(row)

    async def get(self, local_id: str) -> Delegation | None:
        return await self._one("id = $1", local_id)

    async def by_origin(self, origin_task_id: str) -> Delegation | None:
        return await self._one("origin_task_id = $1", origin_task_id)

    async def by_remote(self, peer: str, remote_task_id: str) -> Delegation | None:
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM delegations WHERE peer = $1 AND remote_task_id = $2 "
            "ORDER BY created_at DESC LIMIT 1",
            peer, remote_task_id,
        )
        return None if row is None else _record(row)

    async def recent(self, limit: int = 100) -> list[Delegation]:
        rows = await self._db.fetch(
            f"SELECT {_COLUMNS} FROM delegations ORDER BY created_at DESC, id LIMIT $1", limit
        )
        return [_record(row) for row in rows]

    async def _one(self, where: str, value: str) -> Delegation | None:
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM delegations WHERE {where} ORDER BY created_at DESC LIMIT 1",
            value,
        )
        return None if row is None else _record(row)
