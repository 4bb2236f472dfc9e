"""Schema 14 on both backends: the delegation records a release before wrote, their task in
A2A 0.3's form and their state by 0.3's name, are converted to 1.0's in the migration, in
batches, once; the store reads them back as the 1.0 task each stood for."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import pytest

from synthorg.dialects.objects import state_v1, task_v1
from synthorg.generated.models import Task
from synthorg.store.delegations import DelegationStore
from synthorg.store.postgres import schema as pg_schema
from synthorg.store.postgres.database import PgDatabase
from synthorg.store.postgres.delegations import PgDelegationStore
from synthorg.store.postgres.options import PgOptions
from synthorg.store.sqlite import schema as sqlite_schema
from synthorg.store.sqlite.database import DB_FILENAME, open_database
from synthorg.store.sqlite.delegations import SqliteDelegationStore
from synthorg.store.task_codec import dumps_v03

T = TypeVar("T")
COUNT = 7  # delegations, over batches of BATCH
BATCH = 3
STATES = ("completed", "working", "input-required", "failed", "canceled", "submitted",
          "rejected")
# A body an earlier release's push receiver wrote by field name (`bytes_`): converted too.
OLD_BYTES = 3


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def old_task(n: int) -> Task:
    return Task.model_validate({
        "kind": "task", "id": f"r-{n}", "contextId": "ctx",
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


def old_body(n: int, task: Task) -> str:
    body = dumps_v03(task)
    return body.replace('"bytes":', '"bytes_":') if n == OLD_BYTES else body


ROW = ("INSERT INTO delegations (id, peer, remote_task_id, context_id, message_id, state, "
       "origin_task_id, body, created_at, updated_at, binding) "
       "VALUES ({}, 'peer-a', {}, 'ctx', {}, {}, NULL, {}, {}, {}, NULL)")


def local_id(n: int) -> str:
    return f"d-{n:02d}"


def test_sqlite_converts_every_row_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_schema, "BATCH", BATCH)
    data = tmp_path / "data"
    data.mkdir()
    conn = sqlite3.connect(data / DB_FILENAME)
    for steps in sqlite_schema.MIGRATIONS[:13]:  # the schema a release before wrote
        for step in steps:
            if isinstance(step, str):
                conn.execute(step)  # v13's Python steps: no tasks to convert
    conn.execute("PRAGMA user_version = 13")
    tasks = [old_task(n) for n in range(COUNT)]
    for n, task in enumerate(tasks):
        stamp = f"2026-01-01T00:00:{n:02d}.000Z"
        conn.execute(ROW.format(*"???????"), (local_id(n), task.id, f"m-{n}",
                                             task.status.state, old_body(n, task), stamp, stamp))
    conn.commit()
    conn.close()
    db = open_database(data)  # migrates
    try:
        assert db.migrated_from == 13
        check_converted(SqliteDelegationStore(db), tasks, sqlite_rows(data))
        before = sqlite_rows(data)
        db.write_blocking(lambda c: [step(c) for step in sqlite_schema._V14 if callable(step)])
        assert sqlite_rows(data) == before  # converted already: left as it is
    finally:
        db.close()


def sqlite_rows(data: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(data / DB_FILENAME)
    try:
        return [tuple(r) for r in conn.execute(
            "SELECT id, state, body FROM delegations ORDER BY id").fetchall()]
    finally:
        conn.close()


def check_converted(store: DelegationStore, tasks: list[Task],
                    rows: list[tuple[Any, ...]]) -> None:
    assert len(rows) == COUNT
    for n, (row_id, state, body) in enumerate(rows):
        task = tasks[n]
        assert row_id == local_id(n)
        assert state == state_v1(task.status.state)
        assert json.loads(body) == task_v1(task).model_dump(mode="json", by_alias=True,
                                                             exclude_none=True)
        record = run(store.get(row_id))
        assert record is not None
        assert record.task == task_v1(task) and record.state == state
        assert run(store.by_remote("peer-a", task.id)) == record


def test_postgres_converts_every_row_once(
    postgres_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_schema, "BATCH", BATCH)
    tasks = [old_task(n) for n in range(COUNT)]

    async def before() -> None:
        conn = await asyncpg.connect(postgres_database)
        try:
            monkeypatch.setattr(pg_schema, "MIGRATIONS", pg_schema.MIGRATIONS[:13])
            monkeypatch.setattr(pg_schema, "SCHEMA_VERSION", 13)
            await pg_schema.migrate(conn)
            for n, task in enumerate(tasks):
                stamp = f"2026-01-01T00:00:{n:02d}.000Z"
                await conn.execute(ROW.format(*(f"${i}" for i in range(1, 8))), local_id(n),
                                   task.id, f"m-{n}", task.status.state, old_body(n, task),
                                   stamp, stamp)
        finally:
            await conn.close()

    run(before())
    monkeypatch.undo()
    monkeypatch.setattr(pg_schema, "BATCH", BATCH)
    db = PgDatabase(PgOptions(postgres_database))
    try:
        assert run(db.run(pg_schema.migrate)) == (13, 14)
        check_converted(PgDelegationStore(db), tasks, pg_rows(postgres_database))
        rows = pg_rows(postgres_database)

        async def again(conn: asyncpg.Connection) -> None:
            for step in pg_schema._V14:
                if callable(step):
                    await step(conn)

        run(db.run(again))
        assert pg_rows(postgres_database) == rows  # converted already: left as it is
    finally:
        db.close()


def pg_rows(url: str) -> list[tuple[Any, ...]]:
    async def fetch() -> list[tuple[Any, ...]]:
        conn = await asyncpg.connect(url)
        try:
            return [tuple(r) for r in await conn.fetch(
                "SELECT id, state, body FROM delegations ORDER BY id")]
        finally:
            await conn.close()

    return run(fetch())
