"""Push notification configs in PostgreSQL, shared by every replica."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from synthorg.clock import utc_now
from synthorg.store.postgres.database import Connection, PgDatabase
from synthorg.store.push import MAX_CONFIGS_PER_TASK, Delivery, StoredConfig


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

    def rewrite(self, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> int:
        async def job(conn: Connection) -> int:
            rows = await conn.fetch(
                "SELECT task_id, config_id, body FROM push_configs FOR UPDATE"
            )
            changed = 0
            for task_id, config_id, body in rows:
                new = change(json.loads(body))
                if new is not None:
                    await conn.execute(
                        "UPDATE push_configs SET body = $1 WHERE task_id = $2 AND config_id = $3",
                        json.dumps(new), task_id, config_id,
                    )
                    changed += 1
            return changed

        return self._db.blocking(lambda db: db.transaction(job))


class PgPushOutbox:
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def enqueue(
        self, task_id: str, status_key: str, version: int, body: str, now: float
    ) -> int:
        # One statement, one round trip for every config: the config rows' locks order two
        # replicas enqueueing at once, and the second one's condition is checked again on
        # the row the first left (the same status, or a newer version: it adds nothing).
        row = await self._db.fetchrow(
            "WITH due AS (UPDATE push_configs SET last_status_key = $2, "
            "last_status_version = $3 WHERE task_id = $1 "
            "AND last_status_key IS DISTINCT FROM $2 "
            "AND (last_status_version IS NULL OR last_status_version < $3) "
            "RETURNING config_id), "
            "added AS (INSERT INTO push_outbox (id, task_id, config_id, status_key, body, "
            "next_at, created_at) SELECT replace(gen_random_uuid()::text, '-', ''), $1, "
            "config_id, $2, $4, $5, $6 FROM due "
            "ON CONFLICT (task_id, config_id, status_key) DO NOTHING RETURNING 1) "
            "SELECT count(*) FROM added",
            task_id, status_key, version, body, now, utc_now(),
        )
        return 0 if row is None else int(row[0])

    async def claim(self, now: float, lease: float, limit: int) -> list[Delivery]:
        # SKIP LOCKED: replicas claiming together take different deliveries.
        rows = await self._db.fetch(
            "WITH due AS (SELECT id FROM push_outbox WHERE outcome IS NULL AND next_at <= $1 "
            "ORDER BY next_at LIMIT $2 FOR UPDATE SKIP LOCKED), "
            "claimed AS (UPDATE push_outbox o SET next_at = $3 FROM due WHERE o.id = due.id "
            "RETURNING o.id, o.task_id, o.config_id, o.body, o.attempts) "
            "SELECT k.id, k.task_id, c.peer, c.body, k.body, k.attempts FROM claimed k "
            "LEFT JOIN push_configs c ON c.task_id = k.task_id AND c.config_id = k.config_id",
            now, limit, now + lease,
        )
        return [
            Delivery(r[0], r[1], r[2] or "", None if r[3] is None else json.loads(r[3]), r[4],
                     r[5])
            for r in rows
        ]

    async def delivered(self, delivery_id: str) -> None:
        await self._db.execute(
            "UPDATE push_outbox SET outcome = 'delivered', attempts = attempts + 1 WHERE id = $1",
            delivery_id,
        )

    async def delivered_many(self, delivery_ids: Sequence[str]) -> None:
        await self._db.execute(
            "UPDATE push_outbox SET outcome = 'delivered', attempts = attempts + 1 "
            "WHERE id = ANY($1::text[])",
            list(delivery_ids),
        )

    async def retry(self, delivery_id: str, next_at: float, error: str) -> None:
        await self._db.execute(
            "UPDATE push_outbox SET attempts = attempts + 1, next_at = $1, last_error = $2 "
            "WHERE id = $3",
            next_at, error, delivery_id,
        )

    async def failed(self, delivery_id: str, error: str) -> None:
        await self._db.execute(
            "UPDATE push_outbox SET outcome = 'failed', attempts = attempts + 1, "
            "last_error = $1 WHERE id = $2",
            error, delivery_id,
        )

    async def owners(self) -> list[tuple[str, str]]:
        rows = await self._db.fetch("SELECT DISTINCT peer, task_id FROM push_configs")
        return [(row[0], row[1]) for row in rows]

    async def state(self, delivery_id: str) -> tuple[str | None, int] | None:
        row = await self._db.fetchrow(
            "SELECT outcome, attempts FROM push_outbox WHERE id = $1", delivery_id
        )
        return None if row is None else (row[0], int(row[1]))

    async def prune(self, before: float, limit: int) -> int:
        status = await self._db.execute(
            "DELETE FROM push_outbox WHERE id IN (SELECT id FROM push_outbox "
            "WHERE outcome IS NOT NULL AND next_at < $1 LIMIT $2)",
            before, limit,
        )
        return _count(status)

    async def pending(self) -> int:
        row = await self._db.fetchrow("SELECT count(*) FROM push_outbox WHERE outcome IS NULL")
        return 0 if row is None else int(row[0])

    async def release(self, now: float, lease: float) -> int:
        status = await self._db.execute(
            "UPDATE push_outbox SET next_at = $1 "
            "WHERE outcome IS NULL AND next_at > $1 AND next_at <= $2",
            now, now + lease,
        )
        return _count(status)


def _count(status: str) -> int:
    """The row count of a command tag such as 'DELETE 12'."""
    return int(status.rsplit(" ", 1)[-1])


class PgPushReceipts:
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def first(
        self, peer: str, delivery_id: str, now: float, keep_after: float | None
    ) -> bool:
        # A receipt older than keep_after is taken over (the bulk of old ones goes in prune).
        status = await self._db.execute(
            "INSERT INTO push_receipts (peer, delivery_id, received_at) VALUES ($1, $2, $3) "
            "ON CONFLICT (peer, delivery_id) DO UPDATE SET received_at = excluded.received_at "
            "WHERE push_receipts.received_at < $4",
            peer, delivery_id, now, keep_after if keep_after is not None else float("-inf"),
        )
        return bool(status != "INSERT 0 0")

    async def prune(self, before: float, limit: int) -> int:
        status = await self._db.execute(
            "DELETE FROM push_receipts WHERE ctid IN (SELECT ctid FROM push_receipts "
            "WHERE received_at < $1 LIMIT $2)",
            before, limit,
        )
        return _count(status)
