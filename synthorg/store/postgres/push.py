"""Push notification configs in PostgreSQL, shared by every replica."""

from __future__ import annotations

import json
from typing import Any

from synthorg.clock import utc_now
from synthorg.store.postgres.database import Connection, PgDatabase
from synthorg.store.push import MAX_CONFIGS_PER_TASK, StoredConfig


class PgPushConfigStore:
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def put(self, peer: str, task_id: str, config: dict[str, Any]) -> bool:
        config_id = config["id"]

        async def job(conn: Connection) -> bool:
            # The task's row lock orders two replicas adding configs to one task.
            await conn.execute("SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE", task_id)
            others = await conn.fetchval(
                "SELECT count(*) FROM push_configs WHERE task_id = $1 AND config_id != $2",
                task_id, config_id,
            )
            if others >= MAX_CONFIGS_PER_TASK:
                return False
            await conn.execute(
                "INSERT INTO push_configs (task_id, config_id, peer, body, updated_at) "
                "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (task_id, config_id) DO UPDATE SET "
                "body = excluded.body, updated_at = excluded.updated_at "
                "WHERE push_configs.peer = excluded.peer",
                task_id, config_id, peer, json.dumps(config), utc_now(),
            )
            return True

        return await self._db.transaction(job)

    async def get(self, peer: str, task_id: str, config_id: str) -> dict[str, Any] | None:
        row = await self._db.fetchrow(
            "SELECT body FROM push_configs WHERE task_id = $1 AND config_id = $2 AND peer = $3",
            task_id, config_id, peer,
        )
        return None if row is None else dict(json.loads(row[0]))

    async def of_task(self, peer: str, task_id: str) -> list[dict[str, Any]]:
        rows = await self._db.fetch(
            "SELECT body FROM push_configs WHERE task_id = $1 AND peer = $2 ORDER BY config_id",
            task_id, peer,
        )
        return [dict(json.loads(row[0])) for row in rows]

    async def delete(self, peer: str, task_id: str, config_id: str) -> bool:
        status = await self._db.execute(
            "DELETE FROM push_configs WHERE task_id = $1 AND config_id = $2 AND peer = $3",
            task_id, config_id, peer,
        )
        return status != "DELETE 0"

    async def for_task(self, task_id: str) -> list[StoredConfig]:
        rows = await self._db.fetch(
            "SELECT peer, body FROM push_configs WHERE task_id = $1 ORDER BY config_id",
            task_id,
        )
        return [StoredConfig(row[0], task_id, json.loads(row[1])) for row in rows]
