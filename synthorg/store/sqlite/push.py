"""Push notification configs in SQLite: reads on the event loop, writes group-committed."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from synthorg.clock import utc_now
from synthorg.store.push import MAX_CONFIGS_PER_TASK, StoredConfig
from synthorg.store.sqlite.database import Database


class SqlitePushConfigStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def put(self, peer: str, task_id: str, config: dict[str, Any]) -> bool:
        config_id = config["id"]

        def job(conn: sqlite3.Connection) -> bool:
            others = conn.execute(
                "SELECT count(*) FROM push_configs WHERE task_id = ? AND config_id != ?",
                (task_id, config_id),
            ).fetchone()[0]
            if others >= MAX_CONFIGS_PER_TASK:
                return False
            conn.execute(
                "INSERT INTO push_configs (task_id, config_id, peer, body, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (task_id, config_id) DO UPDATE SET "
                "body = excluded.body, updated_at = excluded.updated_at "
                "WHERE push_configs.peer = excluded.peer",
                (task_id, config_id, peer, json.dumps(config), utc_now()),
            )
            return True

        return await self._db.write(job)

    async def get(self, peer: str, task_id: str, config_id: str) -> dict[str, Any] | None:
        row = self._db.query_one(
            "SELECT body FROM push_configs WHERE task_id = ? AND config_id = ? AND peer = ?",
            (task_id, config_id, peer),
        )
        return None if row is None else dict(json.loads(row[0]))

    async def of_task(self, peer: str, task_id: str) -> list[dict[str, Any]]:
        rows = self._db.query(
            "SELECT body FROM push_configs WHERE task_id = ? AND peer = ? ORDER BY config_id",
            (task_id, peer),
        )
        return [dict(json.loads(row[0])) for row in rows]

    async def delete(self, peer: str, task_id: str, config_id: str) -> bool:
        def job(conn: sqlite3.Connection) -> bool:
            return conn.execute(
                "DELETE FROM push_configs WHERE task_id = ? AND config_id = ? AND peer = ?",
                (task_id, config_id, peer),
            ).rowcount > 0

        return await self._db.write(job)

    async def for_task(self, task_id: str) -> list[StoredConfig]:
        rows = self._db.query(
            "SELECT peer, body FROM push_configs WHERE task_id = ? ORDER BY config_id",
            (task_id,),
        )
        return [StoredConfig(row[0], task_id, json.loads(row[1])) for row in rows]
