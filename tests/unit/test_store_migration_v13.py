"""Schema 13 on both backends: the tasks and logged events a release before wrote in A2A
0.3's form are converted to 1.0's in the migration, in batches, once; the store reads them
back as it read them before."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import pytest

from synthorg.dialects.objects import event_v03_json, state_v1, task_v1
from synthorg.generated.models import Task
from synthorg.store.postgres import schema as pg_schema
from synthorg.store.postgres.database import PgDatabase
from synthorg.store.postgres.options import PgOptions
from synthorg.store.postgres.tasks import PgTaskStore
from synthorg.store.sqlite import schema as sqlite_schema
from synthorg.store.sqlite.database import DB_FILENAME, open_database
from synthorg.store.sqlite.tasks import SqliteTaskStore
from synthorg.store.task_codec import dumps_v03
from synthorg.store.tasks import StoredTask, TaskStore, event_seq

T = TypeVar("T")
COUNT = 7  # tasks, over batches of BATCH
BATCH = 3
STATES = ("completed", "working", "input-required", "failed", "canceled", "submitted",
          "rejected")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def old_task(n: int) -> Task:
    return Task.model_validate({
        "kind": "task", "id": f"t-{n}", "contextId": "ctx",
        "status": {"state": STATES[n % len(STATES)], "timestamp": "2026-01-01T00:00:00.000Z",
                   "message": {"kind": "message", "role": "agent", "messageId": f"s-{n}",
                               "parts": [{"kind": "text", "text": "ok ✓"}]}},
        "history": [{"kind": "message", "role": "user", "messageId": f"m-{n}",
                     "parts": [{"kind": "text", "text": "hi"},
                               {"kind": "data", "data": {"n": n}}]}],
        "artifacts": [{"artifactId": "a", "parts": [
            {"kind": "file", "file": {"bytes": "aGk=", "name": "f", "mimeType": "text/plain"}},
            {"kind": "file", "file": {"uri": "https://example.com/x"}}]}],
        "metadata": {"agentId": "echo"},
    })


def old_events(task: Task) -> list[str]:
    status = {"kind": "status-update", "taskId": task.id, "contextId": task.contextId,
              "status": {"state": "working"}, "final": False}
    chunk = {"kind": "artifact-update", "taskId": task.id, "contextId": task.contextId,
             "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "x"}]},
             "append": True, "lastChunk": True}
    return [dumps_v03(task), json.dumps(status), json.dumps(chunk)]


ROW = ("INSERT INTO tasks (id, peer, context_id, state, body, created_at, updated_at, version) "
       "VALUES ({}, 'peer-a', 'ctx', {}, {}, 'x', 'x', 0)")
EVENT = "INSERT INTO task_events (task_id, seq, peer, body) VALUES ({}, {}, 'peer-a', {})"


def test_sqlite_converts_every_row_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_schema, "BATCH", BATCH)
    data = tmp_path / "data"
    data.mkdir()
    conn = sqlite3.connect(data / DB_FILENAME)
    for steps in sqlite_schema.MIGRATIONS[:12]:  # the schema a release before wrote
        for step in steps:
            assert isinstance(step, str)
            conn.execute(step)
    conn.execute("PRAGMA user_version = 12")
    tasks = [old_task(n) for n in range(COUNT)]
    for task in tasks:
        conn.execute(ROW.format("?", "?", "?"), (task.id, task.status.state, dumps_v03(task)))
        for i, body in enumerate(old_events(task)):
            conn.execute(EVENT.format("?", "?", "?"), (task.id, event_seq(0, i), body))
    conn.commit()
    conn.close()
    db = open_database(data)  # migrates
    try:
        assert db.migrated_from == 12
        check_converted(SqliteTaskStore(db), tasks, sqlite_rows(data))
        before = sqlite_rows(data)
        db.write_blocking(lambda c: [step(c) for step in sqlite_schema._V13 if callable(step)])
        assert sqlite_rows(data) == before  # converted already: left as it is
    finally:
        db.close()


def sqlite_rows(data: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(data / DB_FILENAME)
    try:
        return [tuple(r) for r in conn.execute(
            "SELECT 'task', id, state, body FROM tasks UNION ALL "
            "SELECT 'event', task_id, seq, body FROM task_events ORDER BY 1, 2, 3"
        ).fetchall()]
    finally:
        conn.close()


def check_converted(store: TaskStore, tasks: list[Task], rows: list[tuple[Any, ...]]) -> None:
    by_id = {task.id: task for task in tasks}
    task_rows = [row for row in rows if row[0] == "task"]
    event_rows = [row for row in rows if row[0] == "event"]
    assert len(task_rows) == COUNT and len(event_rows) == 3 * COUNT
    for _, task_id, state, body in task_rows:
        task = by_id[task_id]
        assert state == "TASK_STATE_" + task.status.state.upper().replace("-", "_")
        assert json.loads(body) == task_v1(task).model_dump(mode="json", by_alias=True,
                                                             exclude_none=True)
        assert run(store.get("peer-a", task_id)) == StoredTask(task_v1(task), 0)
    for _, _, _, body in event_rows:
        assert set(json.loads(body)) <= {"task", "statusUpdate", "artifactUpdate"}
    for task in tasks:
        # replayed as 1.0 StreamResponses, each the 0.3 event it was
        replayed = run(store.events_after("peer-a", task.id, 0, 10))
        assert [event_v03_json(json.loads(e.body)) for e in replayed] == [
            json.loads(b) for b in old_events(task)]
    counts: dict[str, int] = {}
    for task in tasks:
        state = state_v1(task.status.state)
        counts[state] = counts.get(state, 0) + 1
    assert run(store.count_by_state()) == counts


def test_postgres_converts_every_row_once(
    postgres_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_schema, "BATCH", BATCH)
    tasks = [old_task(n) for n in range(COUNT)]

    async def before() -> None:
        conn = await asyncpg.connect(postgres_database)
        try:
            monkeypatch.setattr(pg_schema, "MIGRATIONS", pg_schema.MIGRATIONS[:12])
            monkeypatch.setattr(pg_schema, "SCHEMA_VERSION", 12)
            await pg_schema.migrate(conn)
            for task in tasks:
                await conn.execute(ROW.format("$1", "$2", "$3"), task.id, task.status.state,
                                   dumps_v03(task))
                for i, body in enumerate(old_events(task)):
                    await conn.execute(EVENT.format("$1", "$2", "$3"), task.id,
                                       event_seq(0, i), body)
        finally:
            await conn.close()

    run(before())
    monkeypatch.undo()
    monkeypatch.setattr(pg_schema, "BATCH", BATCH)
    db = PgDatabase(PgOptions(postgres_database))
    try:
        assert run(db.run(pg_schema.migrate)) == (12, pg_schema.SCHEMA_VERSION)
        check_converted(PgTaskStore(db), tasks, pg_rows(postgres_database))
        index = pg_rows(postgres_database, "SELECT 'index', indexdef, 0, '' FROM pg_indexes "
                        "WHERE indexname = 'tasks_unfinished'")
        assert "TASK_STATE_SUBMITTED" in index[0][1] and "TASK_STATE_WORKING" in index[0][1]
        rows = pg_rows(postgres_database)

        async def again(conn: asyncpg.Connection) -> None:
            for step in pg_schema._V13:
                if callable(step):
                    await step(conn)

        run(db.run(again))
        assert pg_rows(postgres_database) == rows  # converted already: left as it is
    finally:
        db.close()


def pg_rows(url: str, sql: str = (
    "SELECT 'task', id, 0, state || ' ' || body FROM tasks UNION ALL "
    "SELECT 'event', task_id, seq, body FROM task_events ORDER BY 1, 2, 3"
)) -> list[tuple[Any, ...]]:
    async def fetch() -> list[tuple[Any, ...]]:
        conn = await asyncpg.connect(url)
        try:
            return [tuple(r) for r in await conn.fetch(sql)]
        finally:
            await conn.close()

    rows = run(fetch())
    if "FROM tasks" in sql:  # back to (kind, id, state, body) for check_converted
        return [(k, i, *b.split(" ", 1)) if k == "task" else (k, i, s, b)
                for k, i, s, b in rows]
    return rows
