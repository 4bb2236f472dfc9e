"""A store written by the release before schema 13 (spec 3.4: tasks kept as A2A 0.3), upgraded
by this one and read back through both dialects: nothing lost, nothing changed.

The fixture (tests/fixtures/release-3.4, made by tests/fixtures/make_release_data.py on that
release) holds a SQLite data dir, a PostgreSQL dump and the answers that release gave:
tasks/get and GetTask for every task, and the replay of each task's logged events by
tasks/resubscribe and SubscribeToTask from the start. A node of this release starts on a copy,
migrates it (schema 12 to 14: every task and event to A2A 1.0, and the delegation records, of
which it holds none: tests/unit/test_store_migration_v14.py converts those), and must give the
same answers; its rows are then in 1.0's form, and a second start migrates nothing.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from synthorg.generated.models import V1Task
from tests.fixtures.release_data import CONFIG, KEY, PEER, SECRET_KEY, read_back
from tests.integration.live import LiveNode
from tests.support.node import cli
from tests.support.postgres import throwaway_database

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "release-3.4"
EVENT_KINDS = {"task", "message", "statusUpdate", "artifactUpdate"}
Json = dict[str, Any]


def expected(backend: str) -> Json:
    answers: Json = json.loads((FIXTURE / f"expected-{backend}.json").read_text())
    return answers


def schema(data_dir: Path, env: dict[str, str] | None = None) -> Json:
    state: Json = json.loads(cli(data_dir, "db", "status", "--json", env=env).stdout)
    return state


def assert_reads_back(node: LiveNode, answers: Json) -> None:
    with node.client(PEER, KEY) as client:
        got = read_back(client, answers["ids"])
    for name in answers["tasks"]:
        for method, answer in answers["tasks"][name].items():
            assert got["tasks"][name][method] == answer, (name, method)
    assert got == answers


def assert_rows_in_1_0(tasks: list[tuple[str, str, str]], events: list[str],
                       answers: Json) -> None:
    """Every row as 1.0 keeps it: a task's body is what GetTask answered for it."""
    get_task = {task["GetTask"]["id"]: task["GetTask"] for task in answers["tasks"].values()}
    assert sorted(get_task) == sorted(task_id for task_id, _, _ in tasks)
    for task_id, state, body in tasks:
        document = json.loads(body)
        assert document == get_task[task_id]
        V1Task.model_validate(document)
        assert state == document["status"]["state"] and state.startswith("TASK_STATE_")
    assert events
    for body in events:
        document = json.loads(body)
        assert len(document) == 1 and set(document) <= EVENT_KINDS, document
        assert "kind" not in json.dumps(document)


# -- SQLite ----------------------------------------------------------------------------------


@pytest.fixture
def sqlite_data_dir(tmp_path: Path) -> Path:
    data_dir = tmp_path / "data"
    shutil.copytree(FIXTURE / "sqlite", data_dir)
    (data_dir / "config.yaml").write_text(CONFIG)
    return data_dir


def sqlite_rows(data_dir: Path) -> tuple[list[tuple[str, str, str]], list[str]]:
    conn = sqlite3.connect(data_dir / "synthorg.db")
    try:
        tasks = conn.execute("SELECT id, state, body FROM tasks ORDER BY id").fetchall()
        events = [row[0] for row in conn.execute(
            "SELECT body FROM task_events ORDER BY task_id, seq")]
    finally:
        conn.close()
    return tasks, events


def test_a_sqlite_data_dir_of_3_4_upgrades_and_reads_back_the_same(
    sqlite_data_dir: Path,
) -> None:
    answers = expected("sqlite")
    before = schema(sqlite_data_dir)
    assert (before["version"], before["latest"], before["pending"]) == (12, 14, ["13", "14"])
    with LiveNode(sqlite_data_dir) as node:
        assert_reads_back(node, answers)
    after = schema(sqlite_data_dir)
    assert (after["version"], after["pending"]) == (14, [])
    assert_rows_in_1_0(*sqlite_rows(sqlite_data_dir), answers)
    rows = sqlite_rows(sqlite_data_dir)
    with LiveNode(sqlite_data_dir) as node:  # a second start: nothing to migrate
        assert_reads_back(node, answers)
    assert sqlite_rows(sqlite_data_dir) == rows


def test_db_migrate_upgrades_a_sqlite_data_dir_of_3_4(sqlite_data_dir: Path) -> None:
    migrated = json.loads(cli(sqlite_data_dir, "db", "migrate", "--json").stdout)
    assert (migrated["from"], migrated["version"], migrated["pending"]) == (12, 14, [])
    answers = expected("sqlite")
    assert_rows_in_1_0(*sqlite_rows(sqlite_data_dir), answers)
    with LiveNode(sqlite_data_dir) as node:
        assert_reads_back(node, answers)


# -- PostgreSQL ------------------------------------------------------------------------------


async def _restore(url: str, dump: str) -> None:
    """A plain pg_dump (INSERTs, no COPY) run as one script, as psql would, less psql's own
    meta-commands (`\\restrict`, which recent pg_dump writes)."""
    script = "\n".join(line for line in dump.splitlines() if not line.startswith("\\"))
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(script)
    finally:
        await conn.close()


async def _pg_rows(url: str) -> tuple[list[tuple[str, str, str]], list[str]]:
    conn = await asyncpg.connect(url)
    try:
        tasks = [(row[0], row[1], row[2]) for row in
                 await conn.fetch("SELECT id, state, body FROM tasks ORDER BY id")]
        events = [row[0] for row in
                  await conn.fetch("SELECT body FROM task_events ORDER BY task_id, seq")]
    finally:
        await conn.close()
    return tasks, events


@pytest.fixture
def restored(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh database holding the 3.4 dump, and the environment of a node on it."""
    with throwaway_database("synthorg_upgrade") as url:
        asyncio.run(_restore(url, (FIXTURE / "postgres.sql").read_text()))
        data_dir = tmp_path / "node"
        data_dir.mkdir()
        (data_dir / "config.yaml").write_text(CONFIG)
        yield data_dir, {"SYNTHORG_DATABASE_URL": url, "SYNTHORG_SECRET_KEY": SECRET_KEY}


def test_a_postgres_store_of_3_4_upgrades_and_reads_back_the_same(
    restored: tuple[Path, dict[str, str]],
) -> None:
    data_dir, env = restored
    url = env["SYNTHORG_DATABASE_URL"]
    answers = expected("postgres")
    before = schema(data_dir, env)
    assert (before["version"], before["latest"]) == (12, 14)
    assert [p.split(":")[0] for p in before["pending"]] == ["13", "14"]
    with LiveNode(data_dir, env=env) as node:
        node.wait_for_event("store.migrated", from_version=12, to_version=14)
        assert_reads_back(node, answers)
    rows = asyncio.run(_pg_rows(url))
    assert_rows_in_1_0(*rows, answers)
    with LiveNode(data_dir, env=env) as node:  # a second start: nothing to migrate
        assert_reads_back(node, answers)
        assert not node.events("store.migrated")
    assert asyncio.run(_pg_rows(url)) == rows
    after = schema(data_dir, env)
    assert (after["version"], after["pending"]) == (14, [])
