"""Push notification configs in SQLite: reads on the event loop, writes group-committed."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from synthorg.clock import utc_now
from synthorg.store.push import MAX_CONFIGS_PER_TASK, Delivery, StoredConfig
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

    def rewrite(self, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> int:
        def job(conn: sqlite3.Connection) -> int:
            rows = conn.execute("SELECT task_id, config_id, body FROM push_configs").fetchall()
            changed = 0
            for task_id, config_id, body in rows:
                new = change(json.loads(body))
                if new is not None:
                    conn.execute(
                        "UPDATE push_configs SET body = ? WHERE task_id = ? AND config_id = ?",
                        (json.dumps(new), task_id, config_id),
                    )
                    changed += 1
            return changed

        return self._db.write_blocking(job)


class SqlitePushOutbox:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def enqueue(
        self, task_id: str, status_key: str, version: int, body: str, now: float
    ) -> int:
        def job(conn: sqlite3.Connection) -> int:
            configs = conn.execute(
                "UPDATE push_configs SET last_status_key = ?, last_status_version = ? "
                "WHERE task_id = ? AND last_status_key IS NOT ? "
                "AND (last_status_version IS NULL OR last_status_version < ?) "
                "RETURNING config_id",
                (status_key, version, task_id, status_key, version),
            ).fetchall()
            added = 0
            for (config_id,) in configs:
                added += conn.execute(
                    "INSERT INTO push_outbox (id, task_id, config_id, status_key, body, next_at, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (task_id, config_id, status_key) DO NOTHING",
                    (uuid.uuid4().hex, task_id, config_id, status_key, body, now, utc_now()),
                ).rowcount
            return added

        return await self._db.write(job)

    async def claim(self, now: float, lease: float, limit: int) -> list[Delivery]:
        def job(conn: sqlite3.Connection) -> list[Delivery]:
            rows = conn.execute(
                "SELECT o.id, o.task_id, c.peer, c.body, o.body, o.attempts FROM push_outbox o "
                "LEFT JOIN push_configs c ON c.task_id = o.task_id AND c.config_id = o.config_id "
                "WHERE o.outcome IS NULL AND o.next_at <= ? ORDER BY o.next_at LIMIT ?",
                (now, limit),
            ).fetchall()
            conn.executemany(
                "UPDATE push_outbox SET next_at = ? WHERE id = ?",
                [(now + lease, row[0]) for row in rows],
            )
            return [
                Delivery(r[0], r[1], r[2] or "", None if r[3] is None else json.loads(r[3]),
                         r[4], r[5])
                for r in rows
            ]

        return await self._db.write(job)

    async def _set(self, sql: str, params: tuple[Any, ...]) -> None:
        def job(conn: sqlite3.Connection) -> None:
            conn.execute(sql, params)

        await self._db.write(job)

    async def delivered(self, delivery_id: str) -> None:
        await self._set(
            "UPDATE push_outbox SET outcome = 'delivered', attempts = attempts + 1 WHERE id = ?",
            (delivery_id,),
        )

    async def delivered_many(self, delivery_ids: Sequence[str]) -> None:
        def job(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "UPDATE push_outbox SET outcome = 'delivered', attempts = attempts + 1 "
                "WHERE id = ?",
                [(delivery_id,) for delivery_id in delivery_ids],
            )

        await self._db.write(job)

    async def retry(self, delivery_id: str, next_at: float, error: str) -> None:
        await self._set(
            "UPDATE push_outbox SET attempts = attempts + 1, next_at = ?, last_error = ? "
            "WHERE id = ?",
            (next_at, error, delivery_id),
        )

    async def failed(self, delivery_id: str, error: str) -> None:
        await self._set(
            "UPDATE push_outbox SET outcome = 'failed', attempts = attempts + 1, last_error = ? "
            "WHERE id = ?",
            (error, delivery_id),
        )

    async def owners(self) -> list[tuple[str, str]]:
        rows = self._db.query("SELECT DISTINCT peer, task_id FROM push_configs")
        return [(row[0], row[1]) for row in rows]

    async def state(self, delivery_id: str) -> tuple[str | None, int] | None:
        row = self._db.query_one(
            "SELECT outcome, attempts FROM push_outbox WHERE id = ?", (delivery_id,)
        )
        return None if row is None else (row[0], int(row[1]))

    async def prune(self, before: float, limit: int) -> int:
        def job(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM push_outbox WHERE id IN (SELECT id FROM push_outbox "
                "WHERE outcome IS NOT NULL AND next_at < ? LIMIT ?)",
                (before, limit),
            ).rowcount

        return await self._db.write(job)

    async def pending(self) -> int:
        row = self._db.query_one("SELECT count(*) FROM push_outbox WHERE outcome IS NULL")
        return 0 if row is None else int(row[0])

    async def release(self, now: float, lease: float) -> int:
        def job(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "UPDATE push_outbox SET next_at = ? "
                "WHERE outcome IS NULL AND next_at > ? AND next_at <= ?",
                (now, now, now + lease),
            ).rowcount

        return await self._db.write(job)


class SqlitePushReceipts:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def first(
        self, peer: str, delivery_id: str, now: float, keep_after: float | None
    ) -> bool:
        # A receipt older than keep_after is taken over (the bulk of old ones goes in prune).
        def job(conn: sqlite3.Connection) -> bool:
            return conn.execute(
                "INSERT INTO push_receipts (peer, delivery_id, received_at) VALUES (?, ?, ?) "
                "ON CONFLICT (peer, delivery_id) DO UPDATE SET received_at = excluded.received_at "
                "WHERE push_receipts.received_at < ?",
                (peer, delivery_id, now, keep_after if keep_after is not None else float("-inf")),
            ).rowcount > 0

        return await self._db.write(job)

    async def prune(self, before: float, limit: int) -> int:
        def job(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM push_receipts WHERE rowid IN (SELECT rowid FROM push_receipts "
                "WHERE received_at < ? LIMIT ?)",
                (before, limit),
            ).rowcount

        return await self._db.write(job)
