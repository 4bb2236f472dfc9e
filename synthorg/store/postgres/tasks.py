"""Tasks and idempotency keys in PostgreSQL, shared by every replica.

Each write is one statement, so it commits atomically without a transaction's extra round
trips: a new task is inserted only if its `(peer, messageId)` key was (one statement with
two inserts), a follow-up's key and its task write go through `synthorg_update_task` (see
`schema.py`), and a write over a task names the version it read (compare-and-set). The row's
lock serialises two replicas writing one task; the loser finds the version moved.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import asyncpg

from synthorg.clock import utc_now
from synthorg.errors import TaskNotFound, VersionConflict
from synthorg.generated.constants import TASK_STATE_FAILED
from synthorg.generated.models import V1Task
from synthorg.store.postgres.database import Connection, PgDatabase
from synthorg.store.postgres.schema import VERSION_CONFLICT_STATE
from synthorg.store.task_codec import TaskCache, dumps, final_event, loads, restart_failure
from synthorg.store.tasks import (
    EVENT_SLOTS,
    UNFINISHED_STATES,
    KeyRecorded,
    LoggedEvent,
    MessageKey,
    Runner,
    StoredTask,
    TaskFilter,
    TaskPageRows,
)

_GET = (
    "SELECT version, CASE WHEN version = $3 THEN NULL ELSE body END FROM tasks "
    "WHERE id = $1 AND peer = $2"
)
# The events a write logs, numbered as `synthorg.store.tasks.event_seq` says (ordinality
# counts from 1): inserted only when the write was.
_LOG = (
    "INSERT INTO task_events (task_id, seq, peer, body) "
    f"SELECT w.id, $10::bigint * {EVENT_SLOTS} + x.ord, $1, x.body "
    "FROM w, unnest($11::text[]) WITH ORDINALITY AS x(body, ord)"
)
_CREATE = (
    "WITH k AS (INSERT INTO message_keys (peer, message_id, digest, task_id) "
    "VALUES ($1, $2, $3, $4) ON CONFLICT (peer, message_id) DO NOTHING RETURNING 1), "
    "w AS (INSERT INTO tasks (id, peer, context_id, state, body, created_at, updated_at, "
    "version, runner) SELECT $4, $1, $5, $6, $7, $8, $8, 0, $9 WHERE EXISTS (SELECT 1 FROM k) "
    f"RETURNING id), e AS ({_LOG}) SELECT count(*) FROM w"
)
_UPDATE = "SELECT synthorg_update_task($1, $2, $3, $4, $5, $6, $7, $8, $9)"
_UPDATE_LOGGED = (
    "WITH u AS (SELECT synthorg_update_task($1, $2, $3, $4, $5, $6, $7, $8, $9) AS outcome), "
    f"w AS (SELECT $2::text AS id FROM u WHERE u.outcome = 'ok'), e AS ({_LOG}) "
    "SELECT outcome FROM u"
)
_KEY = "SELECT digest, task_id FROM message_keys WHERE peer = $1 AND message_id = $2"


class PgTaskStore:
    def __init__(self, db: PgDatabase, runner: Runner | None = None) -> None:
        self._db = db
        self.runner = runner or Runner()
        # Tasks already read, by (peer, id): a version that has not moved means the body has
        # not either, so it is neither sent again nor validated again.
        self._read = TaskCache()

    async def get(self, peer: str, task_id: str) -> StoredTask | None:
        cache_key = (peer, task_id)
        row = await self._db.fetchrow(_GET, task_id, peer, self._read.version_of(cache_key))
        if row is None:
            return None
        version, body = row
        if body is None:
            cached = self._read.get(cache_key, version)
            if cached is not None:
                return cached
            row = await self._db.fetchrow(_GET, task_id, peer, -1)  # evicted meanwhile
            if row is None:
                return None
            version, body = row
        stored = StoredTask(loads(body), version)
        self._read.put(cache_key, stored, len(body))
        return stored

    async def message_key(self, peer: str, message_id: str) -> MessageKey | None:
        row = await self._db.fetchrow(_KEY, peer, message_id)
        return None if row is None else MessageKey(message_id, row[0], row[1])

    async def create(
        self, peer: str, key: MessageKey, task: V1Task, events: Sequence[str] = (),
        *, body: str | None = None,
    ) -> StoredTask:
        body, now = body or dumps(task), utc_now()
        created = await self._db.run(lambda conn: conn.fetchval(
            _CREATE, peer, key.message_id, key.digest, task.id, task.contextId,
            task.status.state, body, now, self.runner.id, 0, list(events),
        ), "write")
        if not created:
            raise KeyRecorded(await self._recorded(peer, key))
        stored = StoredTask(task, 0)
        return stored

    async def update(
        self,
        peer: str,
        task: V1Task,
        version: int,
        key: MessageKey | None = None,
        events: Sequence[str] = (),
    ) -> StoredTask:
        body, now = dumps(task), utc_now()
        logged = (version + 1, list(events)) if events else ()
        state = task.status.state

        async def job(conn: Connection) -> str:
            try:
                outcome: str = await conn.fetchval(
                    _UPDATE_LOGGED if events else _UPDATE,
                    peer, task.id, version, body, state, now,
                    self.runner.id, key.message_id if key else None, key.digest if key else None,
                    *logged,
                )
            except asyncpg.PostgresError as exc:
                if getattr(exc, "sqlstate", None) != VERSION_CONFLICT_STATE:
                    raise
                found = await conn.fetchval(
                    "SELECT 1 FROM tasks WHERE id = $1 AND peer = $2", task.id, peer
                )
                return "conflict" if found else "missing"
            return outcome

        outcome = await self._db.run(job, "write")
        if outcome == "key":
            assert key is not None
            raise KeyRecorded(await self._recorded(peer, key))
        if outcome == "conflict":
            raise VersionConflict()
        if outcome == "missing":
            raise TaskNotFound()
        stored = StoredTask(task, version + 1)
        return stored

    async def _recorded(self, peer: str, key: MessageKey) -> MessageKey:
        row = await self._db.fetchrow(_KEY, peer, key.message_id)
        assert row is not None  # a key is never deleted
        return MessageKey(key.message_id, row[0], row[1])

    async def heartbeat(self) -> None:
        await self._db.execute(
            "INSERT INTO runners (id) VALUES ($1) ON CONFLICT (id) DO UPDATE "
            "SET heartbeat_at = now()", self.runner.id,
        )

    async def retire(self) -> None:
        await self._db.execute("DELETE FROM runners WHERE id = $1", self.runner.id)

    async def adopt(
        self, resumable: Callable[[V1Task], bool], *, others_gone: bool = False
    ) -> list[tuple[str, StoredTask]]:
        runner = self.runner.id

        async def job(conn: Connection) -> list[tuple[str, StoredTask]]:
            taken = []
            for task_id, peer, body, version in await self._orphans(conn, others_gone):
                task = loads(body)
                if resumable(task):
                    await conn.execute(
                        "UPDATE tasks SET runner = $1 WHERE id = $2 AND peer = $3 "
                        "AND version = $4", runner, task_id, peer, version,
                    )
                    taken.append((peer, StoredTask(task, version)))
            return taken

        return await self._db.transaction(job)

    async def _orphans(self, conn: Connection, others_gone: bool) -> list[asyncpg.Record]:
        """Forget the runners that are gone; the unfinished tasks they left, locked."""
        runner, lease = self.runner.id, self.runner.lease_seconds
        # The database's clock judges every lease, so replicas' clocks need not agree.
        await conn.execute(
            "DELETE FROM runners WHERE id != $1 AND "
            "($2 OR heartbeat_at < now() - make_interval(secs => $3))",
            runner, others_gone, lease,
        )
        return list(await conn.fetch(
            "SELECT id, peer, body, version FROM tasks WHERE state = ANY($1::text[]) AND "
            "(runner IS NULL OR (runner != $2 AND runner NOT IN (SELECT id FROM runners))) "
            "FOR UPDATE SKIP LOCKED",  # two replicas sweeping at once take turns per task
            list(UNFINISHED_STATES), runner,
        ))

    async def recover(self, now_iso: str, *, others_gone: bool = False) -> int:
        async def job(conn: Connection) -> int:
            rows = await self._orphans(conn, others_gone)
            for task_id, peer, body, version in rows:
                failed = restart_failure(loads(body), now_iso)
                await conn.execute(
                    "UPDATE tasks SET body = $1, state = $6, updated_at = $2, "
                    "version = version + 1 WHERE id = $3 AND peer = $4 AND version = $5",
                    dumps(failed), now_iso, task_id, peer, version, TASK_STATE_FAILED,
                )
                await conn.execute(
                    "INSERT INTO task_events (task_id, seq, peer, body) "
                    f"VALUES ($1, $2 * {EVENT_SLOTS} + 1, $3, $4)",
                    task_id, version + 1, peer, final_event(failed),
                )
            return len(rows)

        return await self._db.transaction(job)

    async def events_after(
        self, peer: str, task_id: str, after: int, limit: int
    ) -> list[LoggedEvent]:
        rows = await self._db.fetch(
            "SELECT seq, body FROM task_events WHERE task_id = $1 AND peer = $2 AND seq > $3 "
            "ORDER BY seq LIMIT $4",
            task_id, peer, after, limit,
        )
        return [LoggedEvent(seq, body) for seq, body in rows]

    async def live_runners(self) -> int:
        row = await self._db.fetchrow(
            "SELECT count(*) FROM runners WHERE id != $1 AND "
            "heartbeat_at >= now() - make_interval(secs => $2)",
            self.runner.id, self.runner.lease_seconds,
        )
        return int(row[0]) if row is not None else 0

    async def count_by_state(self) -> dict[str, int]:
        rows = await self._db.fetch("SELECT state, count(*) FROM tasks GROUP BY state")
        return {str(row[0]): int(row[1]) for row in rows}

    # Last, so the annotations above resolve `list` to the builtin, not this method.
    async def list(self, peer: str | None = None, limit: int = 100) -> list[V1Task]:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        if peer is None:
            rows = await self._db.fetch(
                "SELECT body FROM tasks ORDER BY seq DESC LIMIT $1", limit
            )
        else:
            rows = await self._db.fetch(
                "SELECT body FROM tasks WHERE peer = $1 ORDER BY seq DESC LIMIT $2", peer, limit
            )
        return [loads(row[0]) for row in rows]

    async def page(
        self, peer: str, where: TaskFilter, before: int | None, limit: int
    ) -> TaskPageRows:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        clauses, params = ["peer = $1"], [peer]
        for column, value in (
            ("context_id", where.context_id),
            ("state", where.state),
            ("updated_at", where.updated_since),
        ):
            if value is not None:
                params.append(value)
                op = ">=" if column == "updated_at" else "="
                clauses.append(f"{column} {op} ${len(params)}")
        condition = " AND ".join(clauses)
        total = await self._db.fetchrow(f"SELECT count(*) FROM tasks WHERE {condition}", *params)
        args: list[object] = [*params]
        if before is not None:
            args.append(before)
            condition += f" AND seq < ${len(args)}"
        args.append(limit)
        rows = await self._db.fetch(
            f"SELECT seq, body FROM tasks WHERE {condition} ORDER BY seq DESC LIMIT ${len(args)}",
            *args,
        )
        return TaskPageRows(
            [(row[0], loads(row[1])) for row in rows], total[0] if total is not None else 0
        )
