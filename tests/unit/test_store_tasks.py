"""The task store's contract, on both backends (SQLite and PostgreSQL): idempotency keys,
ownership, compare-and-set writes, atomic key-and-task commits, recovery of the tasks of
runners that are gone (leases), ordering, several handles (processes, replicas) on one store,
and kill -9 durability; then what only SQLite has (its write lock, its group commit)."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import pytest
from cryptography.fernet import Fernet

from synthorg.dialects.objects import state_v1
from synthorg.errors import StoreError, TaskNotFound, VersionConflict
from synthorg.generated.models import V1Artifact, V1Task, V1TaskStatus, V1TextPart
from synthorg.store.postgres import schema as pg_schema
from synthorg.store.postgres.database import PgDatabase
from synthorg.store.postgres.options import PgOptions
from synthorg.store.postgres.tasks import PgTaskStore
from synthorg.store.sqlite.database import (
    DB_FILENAME,
    Database,
    checkpoint_wal,
    open_database,
)
from synthorg.store.sqlite.tasks import SqliteTaskStore
from synthorg.store.tasks import (
    RESTART_MESSAGE,
    KeyRecorded,
    MessageKey,
    Runner,
    StoredTask,
    TaskFilter,
    TaskStore,
    event_seq,
)
from tests.conftest import BACKENDS

T = TypeVar("T")
KEY = Fernet.generate_key().decode()
REPO_ROOT = Path(__file__).resolve().parents[2]
NOW = "2030-01-01T00:00:00.000Z"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def make_task(task_id: str, state: str = "submitted", context_id: str = "ctx-1") -> V1Task:
    """A task (A2A 1.0, as the store takes them) in `state` (a short name: `working`)."""
    return V1Task.model_validate({
        "id": task_id,
        "contextId": context_id,
        "status": {"state": state_v1(state), "timestamp": "2025-01-01T00:00:00.000Z"},
        "history": [
            {
                "role": "ROLE_USER",
                "messageId": f"m-{task_id}",
                "parts": [{"text": "héllo ✓"}],
                "taskId": task_id,
                "contextId": context_id,
            }
        ],
        "artifacts": [],
        "metadata": {"n": 1},
    })


def key(message_id: str, digest: str = "d-1") -> MessageKey:
    return MessageKey(message_id, digest)


def with_state(task: V1Task, state: str) -> V1Task:
    return task.model_copy(update={"status": V1TaskStatus(state=state_v1(state))})


class Handles:
    """Task store handles on one store, as separate processes (or replicas) would hold."""

    def __init__(self, backend: str, data_dir: Path, url: str | None) -> None:
        self.backend, self.data_dir, self.url = backend, data_dir, url
        self._closers: list[Any] = []
        if url is not None:
            db = PgDatabase(PgOptions(url))
            run(db.run(pg_schema.migrate))
            db.close()

    def open(self, runner: Runner | None = None) -> TaskStore:
        if self.url is None:
            sqlite_db = open_database(self.data_dir)
            self._closers.append(sqlite_db.close)
            return SqliteTaskStore(sqlite_db, runner)
        pg_db = PgDatabase(PgOptions(self.url))
        self._closers.append(pg_db.close)
        return PgTaskStore(pg_db, runner)

    def close(self) -> None:
        for close in self._closers:
            close()

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """What a query over the store's own tables answers, read past the store."""
        if self.url is None:
            conn = sqlite3.connect(self.data_dir / DB_FILENAME)
            try:
                return [tuple(row) for row in conn.execute(sql).fetchall()]
            finally:
                conn.close()

        async def fetch(url: str) -> list[tuple[Any, ...]]:
            conn = await asyncpg.connect(url)
            try:
                return [tuple(row) for row in await conn.fetch(sql)]
            finally:
                await conn.close()

        return run(fetch(self.url))


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture(params=BACKENDS)
def handles(request: pytest.FixtureRequest, data_dir: Path) -> Iterator[Handles]:
    url = request.getfixturevalue("postgres_database") if request.param == "postgresql" else None
    opened = Handles(request.param, data_dir, url)
    yield opened
    opened.close()


@pytest.fixture
def store(handles: Handles) -> TaskStore:
    return handles.open()


def test_both_implement_the_protocol(data_dir: Path) -> None:
    sqlite_store: TaskStore = SqliteTaskStore(open_database(data_dir))  # checked by mypy
    pg_store: TaskStore = PgTaskStore(PgDatabase(PgOptions("postgresql://unused/x")))
    assert sqlite_store.runner.id != pg_store.runner.id  # a runner is new at every start


def test_create_and_get_round_trip(store: TaskStore) -> None:
    task = make_task("t-1")
    assert run(store.create("peer-a", key("m-1"), task)) == StoredTask(task, 0)
    assert run(store.get("peer-a", "t-1")) == StoredTask(task, 0)
    assert run(store.get("peer-a", "missing")) is None
    assert run(store.message_key("peer-a", "m-1")) == MessageKey("m-1", "d-1", "t-1")
    assert run(store.message_key("peer-a", "m-2")) is None


def test_other_peers_task_is_indistinguishable_from_missing(store: TaskStore) -> None:
    run(store.create("peer-a", key("m-1"), make_task("t-1")))
    assert run(store.get("peer-b", "t-1")) is None
    assert run(store.message_key("peer-b", "m-1")) is None


def test_a_recorded_key_writes_nothing_and_names_its_task(store: TaskStore) -> None:
    original = make_task("t-1")
    run(store.create("peer-a", key("m-1"), original))
    for digest in ("d-1", "d-other"):  # a retry and a reuse alike: the first key stands
        with pytest.raises(KeyRecorded) as recorded:
            run(store.create("peer-a", key("m-1", digest), make_task("t-2")))
        assert recorded.value.key == MessageKey("m-1", "d-1", "t-1")
    assert run(store.get("peer-a", "t-2")) is None
    # The same messageId from another peer is an independent key.
    run(store.create("peer-b", key("m-1"), make_task("t-4")))
    assert len(run(store.list())) == 2


def test_update_compares_the_version_it_read(store: TaskStore) -> None:
    task = make_task("t-1")
    run(store.create("peer-a", key("m-1"), task))
    working = with_state(task, "working")
    assert run(store.update("peer-a", working, 0)) == StoredTask(working, 1)
    with pytest.raises(VersionConflict):  # a writer that read version 0 lost the race
        run(store.update("peer-a", with_state(task, "canceled"), 0))
    assert run(store.get("peer-a", "t-1")) == StoredTask(working, 1)
    done = working.model_copy(update={"artifacts": [
        V1Artifact(artifactId="a-1", parts=[V1TextPart(text="x")])
    ]})
    assert run(store.update("peer-a", done, 1)).version == 2


def test_update_touches_only_the_owners_task(store: TaskStore) -> None:
    task = make_task("t-1")
    run(store.create("peer-a", key("m-1"), task))
    with pytest.raises(TaskNotFound):
        run(store.update("peer-b", with_state(task, "canceled"), 0))
    with pytest.raises(TaskNotFound):
        run(store.update("peer-a", make_task("t-missing"), 0))
    assert run(store.get("peer-a", "t-1")) == StoredTask(task, 0)


def test_a_follow_up_key_commits_with_its_update_or_not_at_all(store: TaskStore) -> None:
    task = make_task("t-1")
    run(store.create("peer-a", key("m-1"), task))
    followed = with_state(task, "working")
    run(store.update("peer-a", followed, 0, key("m-2", "d-2")))
    assert run(store.message_key("peer-a", "m-2")) == MessageKey("m-2", "d-2", "t-1")
    # A stale version: neither the key nor the task is written.
    with pytest.raises(VersionConflict):
        run(store.update("peer-a", with_state(task, "completed"), 0, key("m-3", "d-3")))
    assert run(store.message_key("peer-a", "m-3")) is None
    # A key already recorded: the update is not written either.
    with pytest.raises(KeyRecorded):
        run(store.update("peer-a", with_state(task, "completed"), 1, key("m-2", "d-9")))
    assert run(store.get("peer-a", "t-1")) == StoredTask(followed, 1)


def logged_event(n: object, task_id: str = "t-1", state: str = "working") -> str:
    """A 1.0 statusUpdate event, told apart by its metadata."""
    return json.dumps({"statusUpdate": {
        "taskId": task_id, "contextId": "ctx-1", "status": {"state": state_v1(state)},
        "metadata": {"n": n},
    }})


def test_events_commit_with_their_write_in_order_and_per_owner(store: TaskStore) -> None:
    task = make_task("t-1")
    run(store.create("peer-a", key("m-1"), task, [logged_event(0)]))
    run(store.update("peer-a", with_state(task, "working"), 0,
                     events=[logged_event(1), logged_event(2, state="completed")]))
    with pytest.raises(VersionConflict):  # a lost write logs nothing either
        run(store.update("peer-a", with_state(task, "failed"), 0, events=[logged_event("lost")]))
    with pytest.raises(KeyRecorded):
        run(store.update("peer-a", task, 1, key("m-1"), events=[logged_event("lost")]))
    logged = run(store.events_after("peer-a", "t-1", 0, 10))
    # read back as given
    assert [json.loads(e.body) for e in logged] == [
        json.loads(logged_event(0)), json.loads(logged_event(1)),
        json.loads(logged_event(2, state="completed")),
    ]
    assert [e.seq for e in logged] == [event_seq(0, 0), event_seq(1, 0), event_seq(1, 1)]
    assert logged[0].seq < logged[1].seq < logged[2].seq
    assert run(store.events_after("peer-a", "t-1", logged[0].seq, 1)) == [logged[1]]
    assert run(store.events_after("peer-a", "t-1", logged[2].seq, 10)) == []
    assert run(store.events_after("peer-b", "t-1", 0, 10)) == []  # another peer's: none
    with pytest.raises(KeyRecorded):  # a refused create logs nothing
        run(store.create("peer-a", key("m-1"), make_task("t-2"),
                         [logged_event("lost", "t-2")]))
    assert run(store.events_after("peer-a", "t-2", 0, 10)) == []


def test_rows_and_the_interface_are_a2a_1_0(handles: Handles) -> None:
    store = handles.open()
    task = make_task("t-1")
    first = '{"task":' + task.model_dump_json(by_alias=True, exclude_none=True) + "}"
    run(store.create("peer-a", key("m-1"), task, [first]))
    done = with_state(task, "completed")
    run(store.update("peer-a", done, 0, events=[logged_event(1, state="completed")]))
    [(body, state)] = handles.rows("SELECT body, state FROM tasks")
    assert state == "TASK_STATE_COMPLETED"
    as_v1 = done.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert json.loads(body) == as_v1
    assert V1Task.model_validate_json(body) == done
    logged = [json.loads(row[0]) for row in
              handles.rows("SELECT body FROM task_events ORDER BY seq")]
    assert [next(iter(event)) for event in logged] == ["task", "statusUpdate"]
    assert logged[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert logged[1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "final" not in logged[1]["statusUpdate"]
    # the interface speaks the same objects and state names
    assert run(store.get("peer-a", "t-1")) == StoredTask(done, 1)
    assert run(store.count_by_state()) == {"TASK_STATE_COMPLETED": 1}
    completed = TaskFilter(state="TASK_STATE_COMPLETED")
    assert [t for _, t in run(store.page("peer-a", completed, None, 5)).rows] == [done]
    working = TaskFilter(state="TASK_STATE_WORKING")
    assert run(store.page("peer-a", working, None, 5)).rows == []


def test_recovery_writes_the_1_0_failed_state(handles: Handles) -> None:
    gone = handles.open(Runner())
    run(gone.create("peer-a", key("m-1"), with_state(make_task("t-1"), "working")))
    assert handles.rows("SELECT state FROM tasks") == [("TASK_STATE_WORKING",)]
    recovering = handles.open(Runner())
    assert run(recovering.recover(NOW, others_gone=True)) == 1
    assert handles.rows("SELECT state FROM tasks") == [("TASK_STATE_FAILED",)]
    [(body,)] = handles.rows("SELECT body FROM task_events")
    assert json.loads(body)["statusUpdate"]["status"]["state"] == "TASK_STATE_FAILED"
    assert run(recovering.recover(NOW, others_gone=True)) == 0


def test_writes_keep_no_task_in_memory(handles: Handles) -> None:
    """A task written is not kept: under a steady message/send load every task kept is a
    few dozen more objects for each garbage collection to walk (see TaskCache)."""
    store = handles.open()

    async def write(first: int, count: int) -> None:
        for i in range(first, first + count):
            stored = await store.create("peer-a", key(f"m-{i}"), make_task(f"t-{i}"))
            await store.update("peer-a", with_state(stored.task, "working"), stored.version)

    run(write(0, 20))  # statement caches, connections
    gc.collect()
    before = len(gc.get_objects())
    run(write(20, 300))
    gc.collect()
    grown = len(gc.get_objects()) - before
    assert grown < 1500, grown  # kept, these 300 tasks were ~4,500 objects


def test_recovery_logs_the_final_event_of_the_task_it_fails(handles: Handles) -> None:
    gone = handles.open(Runner())
    run(gone.create("peer-a", key("m-1"), with_state(make_task("t-1"), "working")))
    recovering = handles.open(Runner())
    assert run(recovering.recover("2026-01-01T00:00:00Z", others_gone=True)) == 1
    logged = run(recovering.events_after("peer-a", "t-1", 0, 10))
    assert len(logged) == 1
    event = json.loads(logged[0].body)["statusUpdate"]
    assert event["status"]["state"] == "TASK_STATE_FAILED"


def test_one_failed_job_does_not_spoil_its_batch(store: TaskStore) -> None:
    async def batch() -> list[Any]:
        return await asyncio.gather(
            store.create("peer-a", key("m-1"), make_task("t-1")),
            store.create("peer-a", key("m-1"), make_task("t-2")),  # same key: refused
            store.create("peer-a", key("m-3"), make_task("t-3")),
            return_exceptions=True,
        )

    first, second, third = run(batch())
    assert isinstance(third, StoredTask)  # written with the others, whatever they met
    winner, loser = (first, second) if isinstance(first, StoredTask) else (second, first)
    assert isinstance(winner, StoredTask) and isinstance(loser, KeyRecorded)
    assert loser.key.task_id == winner.task.id
    assert {t.id for t in run(store.list())} == {winner.task.id, "t-3"}


def test_a_job_failing_after_it_wrote_leaves_nothing_and_spoils_nothing(
    store: TaskStore,
) -> None:
    """A follow-up whose version moved fails after its key was written (in SQLite's batch):
    its key is not kept, and the writes batched beside it are."""
    run(store.create("peer-a", key("m-1"), make_task("t-1")))
    moved = run(store.update("peer-a", make_task("t-1", "working"), 0))

    async def batch() -> list[Any]:
        return await asyncio.gather(
            store.create("peer-a", key("m-2"), make_task("t-2")),
            store.update("peer-a", make_task("t-1", "completed"), 0, key("m-late")),
            store.create("peer-a", key("m-3"), make_task("t-3")),
            store.update("peer-a", make_task("t-1", "input-required"), moved.version,
                         key("m-4")),
            return_exceptions=True,
        )

    second, stale, third, follow_up = run(batch())
    assert isinstance(stale, VersionConflict)
    assert isinstance(second, StoredTask) and isinstance(third, StoredTask)
    assert isinstance(follow_up, StoredTask)
    assert run(store.message_key("peer-a", "m-late")) is None
    assert run(store.message_key("peer-a", "m-4")) is not None
    assert {t.id for t in run(store.list())} == {"t-1", "t-2", "t-3"}
    got = run(store.get("peer-a", "t-1"))
    assert got is not None and got.task.status.state == "TASK_STATE_INPUT_REQUIRED"


def test_recover_fails_only_submitted_and_working_of_runners_gone(handles: Handles) -> None:
    states = [
        "submitted", "working", "input-required", "auth-required",
        "completed", "failed", "canceled", "rejected",
    ]
    before = {state: make_task(f"t-{state}", state, f"c-{i}") for i, state in enumerate(states)}
    gone = handles.open(Runner("runner-gone"))  # wrote, then vanished: never renewed a lease
    for i, state in enumerate(states):
        run(gone.create("peer-a", key(f"m-{i}", "d"), before[state]))
    store = handles.open(Runner("runner-live"))
    assert run(store.recover(NOW)) == 2
    message_ids: set[str] = set()
    for state in ("submitted", "working"):
        stored = run(store.get("peer-a", f"t-{state}"))
        assert stored is not None and stored.version == 1
        status = stored.task.status
        assert status.state == "TASK_STATE_FAILED" and status.timestamp == NOW
        message = status.message
        assert message is not None and message.role == "ROLE_AGENT"
        assert message.parts == [V1TextPart(text=RESTART_MESSAGE)]
        assert (message.taskId, message.contextId) == (f"t-{state}", before[state].contextId)
        message_ids.add(message.messageId)
        assert stored.task.history == before[state].history
    for state in states[2:]:
        assert run(store.get("peer-a", f"t-{state}")) == StoredTask(before[state], 0)
    assert run(store.recover(NOW)) == 0
    assert len(message_ids) == 2


def test_recover_spares_a_live_runners_tasks_until_its_lease_ends(handles: Handles) -> None:
    """A replica that starts (or sweeps) never fails what another live replica runs."""
    live = handles.open(Runner("runner-a", lease_seconds=60))
    run(live.heartbeat())
    run(live.create("peer-a", key("m-1"), make_task("t-1", "working")))
    other = handles.open(Runner("runner-b", lease_seconds=60))
    assert run(other.recover(NOW)) == 0  # runner-a holds its lease
    assert run(other.get("peer-a", "t-1")).task.status.state == "TASK_STATE_WORKING"  # type: ignore[union-attr]
    # A runner whose lease is judged already over (a zero lease) sees runner-a gone.
    strict = handles.open(Runner("runner-c", lease_seconds=0.0))
    assert run(strict.recover(NOW)) == 1
    assert run(other.get("peer-a", "t-1")).task.status.state == "TASK_STATE_FAILED"  # type: ignore[union-attr]


def test_a_retired_runners_tasks_are_recovered_at_once(handles: Handles) -> None:
    leaving = handles.open(Runner("runner-a", lease_seconds=60))
    run(leaving.heartbeat())
    run(leaving.create("peer-a", key("m-1"), make_task("t-1", "working")))
    run(leaving.retire())  # a clean stop ends the lease now
    assert run(handles.open(Runner("runner-b")).recover(NOW)) == 1


def test_only_server_at_start_recovers_every_other_runners_tasks(handles: Handles) -> None:
    previous = handles.open(Runner("runner-old", lease_seconds=60))
    run(previous.heartbeat())  # its lease still holds: it was killed a moment ago
    run(previous.create("peer-a", key("m-1"), make_task("t-1", "submitted")))
    starting = handles.open(Runner("runner-new", lease_seconds=60))
    assert run(starting.recover(NOW)) == 0
    assert run(starting.recover(NOW, others_gone=True)) == 1


def test_a_follow_up_moves_the_task_to_its_writers_runner(handles: Handles) -> None:
    """The runner that last wrote an unfinished task runs it: its lease is the one that
    counts (a follow-up through another replica hands the task over)."""
    first = handles.open(Runner("runner-a", lease_seconds=60))
    run(first.heartbeat())
    stored = run(first.create("peer-a", key("m-1"), make_task("t-1", "input-required")))
    second = handles.open(Runner("runner-b", lease_seconds=60))
    run(second.update("peer-a", with_state(stored.task, "working"), 0, key("m-2")))
    run(first.retire())
    assert run(handles.open(Runner("runner-c")).recover(NOW)) == 1  # runner-b never renewed


def test_list_newest_first_with_peer_filter_and_limit(store: TaskStore) -> None:
    for i in range(5):
        peer = "peer-a" if i % 2 == 0 else "peer-b"
        run(store.create(peer, key(f"m-{i}", "d"), make_task(f"t-{i}")))
    assert [t.id for t in run(store.list())] == ["t-4", "t-3", "t-2", "t-1", "t-0"]
    assert [t.id for t in run(store.list("peer-a"))] == ["t-4", "t-2", "t-0"]
    assert [t.id for t in run(store.list(limit=2))] == ["t-4", "t-3"]
    assert run(store.list("nobody")) == []
    with pytest.raises(ValueError):
        run(store.list(limit=0))


def test_page_lists_one_peers_tasks_newest_first_by_cursor(store: TaskStore) -> None:
    for i in range(5):
        peer = "peer-a" if i < 4 else "peer-b"
        state = "completed" if i % 2 else "working"
        task = make_task(f"t-{i}", state, context_id="ctx-odd" if i % 2 else "ctx-even")
        run(store.create(peer, key(f"m-{i}", "d"), task))
    everything = run(store.page("peer-a", TaskFilter(), None, 10))
    assert ([t.id for _, t in everything.rows], everything.total) == (
        ["t-3", "t-2", "t-1", "t-0"], 4
    )
    first = run(store.page("peer-a", TaskFilter(), None, 2))
    assert [t.id for _, t in first.rows] == ["t-3", "t-2"] and first.total == 4
    rest = run(store.page("peer-a", TaskFilter(), first.rows[-1][0], 2))
    assert [t.id for _, t in rest.rows] == ["t-1", "t-0"] and rest.total == 4
    done = run(store.page("peer-a", TaskFilter(state="TASK_STATE_COMPLETED"), None, 10))
    assert [t.id for _, t in done.rows] == ["t-3", "t-1"] and done.total == 2
    even = run(store.page("peer-a", TaskFilter(context_id="ctx-even"), None, 10))
    assert [t.id for _, t in even.rows] == ["t-2", "t-0"]
    future = run(store.page("peer-a", TaskFilter(updated_since="2999-01-01T00:00:00.000Z"),
                            None, 10))
    assert (future.rows, future.total) == ([], 0)
    assert run(store.page("nobody", TaskFilter(), None, 10)).rows == []
    with pytest.raises(ValueError):
        run(store.page("peer-a", TaskFilter(), None, 0))


def test_a_second_handle_sees_writes_at_once(store: TaskStore, handles: Handles) -> None:
    other = handles.open()
    assert run(other.get("peer-a", "t-1")) is None
    task = make_task("t-1")
    run(store.create("peer-a", key("m-1"), task))
    assert run(other.get("peer-a", "t-1")) == StoredTask(task, 0)
    # ... and compare-and-set holds between the two handles.
    run(other.update("peer-a", with_state(task, "completed"), 0))
    with pytest.raises(VersionConflict):
        run(store.update("peer-a", with_state(task, "canceled"), 0))
    assert run(store.get("peer-a", "t-1")).task.status.state == "TASK_STATE_COMPLETED"  # type: ignore[union-attr]


def test_a_read_cached_at_one_version_gives_way_to_another_handles_write(
    store: TaskStore, handles: Handles
) -> None:
    task = make_task("t-1")
    run(store.create("peer-a", key("m-1"), task))
    first = run(store.get("peer-a", "t-1"))
    assert first == StoredTask(task, 0)
    assert run(store.get("peer-a", "t-1")) is first  # the same version: the cached task
    done = with_state(task, "completed")
    run(handles.open().update("peer-a", done, 0))
    after = run(store.get("peer-a", "t-1"))
    assert after == StoredTask(done, 1)  # the body of the version read, not the cached one
    assert run(store.get("peer-a", "t-1")) is after


def test_two_handles_racing_one_key_and_one_version_each_win_once(handles: Handles) -> None:
    """Two replicas at once: one task per key, one write per version, across handles."""
    first, second = handles.open(), handles.open()

    async def race_creates() -> list[Any]:
        return await asyncio.gather(
            *(h.create("peer-a", key("m-1", f"d-{i}"), make_task(f"t-{i}"))
              for i, h in enumerate([first, second] * 4)),
            return_exceptions=True,
        )

    results = run(race_creates())
    assert sum(isinstance(r, StoredTask) for r in results) == 1
    assert all(isinstance(r, StoredTask | KeyRecorded) for r in results), results
    winner = next(r for r in results if isinstance(r, StoredTask)).task

    async def race_updates() -> list[Any]:
        return await asyncio.gather(
            *(h.update("peer-a", with_state(winner, state), 0, key(f"f-{i}", "d"))
              for i, (h, state) in enumerate([(first, "canceled"), (second, "completed")] * 3)),
            return_exceptions=True,
        )

    updates = run(race_updates())
    assert sum(isinstance(r, StoredTask) for r in updates) == 1
    assert all(isinstance(r, StoredTask | VersionConflict) for r in updates), updates
    # The losers' follow-up keys were not recorded: they stand for nothing.
    recorded = [run(first.message_key("peer-a", f"f-{i}")) for i in range(6)]
    assert sum(r is not None for r in recorded) == 1


def test_concurrent_creates_of_one_key_yield_one_task(store: TaskStore) -> None:
    async def race() -> list[Any]:
        return await asyncio.gather(
            *(store.create("peer-a", key("m-1", f"d-{i}"), make_task(f"t-{i}"))
              for i in range(10)),
            return_exceptions=True,
        )

    results = run(race())
    assert sum(isinstance(r, StoredTask) for r in results) == 1
    assert sum(isinstance(r, KeyRecorded) for r in results) == 9
    assert len(run(store.list())) == 1


# -- SQLite only: its write lock, its group commit ------------------------------------------


@pytest.fixture
def db(data_dir: Path) -> Iterator[Database]:
    database = open_database(data_dir)
    yield database
    database.close()


@pytest.fixture
def sqlite_store(db: Database) -> SqliteTaskStore:
    return SqliteTaskStore(db)


def test_a_write_waits_for_another_writer_without_blocking_the_loop(
    sqlite_store: SqliteTaskStore, data_dir: Path
) -> None:
    """Another process holds the write lock: the write waits on the event loop (other work
    goes on), then commits once the lock is free."""
    holder = sqlite3.connect(data_dir / "synthorg.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")

    async def scenario() -> tuple[StoredTask, int]:
        write = asyncio.ensure_future(
            sqlite_store.create("peer-a", key("m-1"), make_task("t-1"))
        )
        ticks = 0
        while ticks < 20:  # the loop keeps turning while the write waits for the lock
            await asyncio.sleep(0)
            ticks += 1
        assert not write.done()
        holder.execute("COMMIT")
        return await write, ticks

    try:
        stored, ticks = run(scenario())
    finally:
        holder.close()
    assert stored.task.id == "t-1" and ticks == 20


def test_reads_leave_no_transaction_open_so_checkpoints_empty_the_wal(
    sqlite_store: SqliteTaskStore, data_dir: Path
) -> None:
    """A read left unfinished would pin the WAL: it would grow without end under load."""
    for i in range(50):
        run(sqlite_store.create("peer-a", key(f"m-{i}"), make_task(f"t-{i}")))
        assert run(sqlite_store.get("peer-a", "missing")) is None
        assert run(sqlite_store.get("peer-a", f"t-{i}")) is not None  # a row read last
    other = sqlite3.connect(data_dir / "synthorg.db", isolation_level=None)
    try:
        busy, log, done = other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        other.close()
    assert busy == 0 and log == done
    assert (data_dir / "synthorg.db-wal").stat().st_size == 0


def test_the_wal_stays_bounded_under_steady_writes(
    sqlite_store: SqliteTaskStore, db: Database, data_dir: Path
) -> None:
    """Checkpoints keep up with writes that never pause: the WAL starts over, it does not
    grow with every commit."""
    db.checkpoint_every = 50

    async def steady() -> int:
        largest = 0
        for i in range(400):
            await sqlite_store.create("peer-a", key(f"m-{i}"), make_task(f"t-{i}"))
            await sqlite_store.get("peer-a", f"t-{i}")
            largest = max(largest, (data_dir / "synthorg.db-wal").stat().st_size)
        return largest

    largest = run(steady())
    # 400 commits of several pages each would reach ~16 MiB; a checkpoint every 50 commits
    # keeps the WAL within two periods (~4 MiB), however the checkpoint's thread is scheduled:
    # writes wait for a checkpoint that falls a whole period behind.
    assert largest < 5 * 1024 * 1024, largest


def test_group_commits_are_checkpointed_by_the_jobs_they_carry(
    sqlite_store: SqliteTaskStore, db: Database, data_dir: Path
) -> None:
    """Under load one commit carries many jobs: checkpoints follow the jobs, so the WAL stays
    within about two periods of them however few the commits are."""
    db.checkpoint_every = 50
    text = "x" * 40_000  # each task's body its own ten pages

    def big_task(task_id: str) -> V1Task:
        task = make_task(task_id)
        return task.model_copy(update={"artifacts": [V1Artifact(
            artifactId=f"a-{task_id}", parts=[V1TextPart(text=text)])]})

    async def bursts() -> int:
        largest = 0
        for burst in range(16):  # 400 tasks in about 16 commits
            await asyncio.gather(*(
                sqlite_store.create("peer-a", key(f"m-{burst}-{i}"), big_task(f"t-{burst}-{i}"))
                for i in range(25)
            ))
            largest = max(largest, (data_dir / "synthorg.db-wal").stat().st_size)
        return largest

    largest = run(bursts())
    # Counted in commits, no checkpoint would run at all: ~16 MiB of WAL.
    assert largest < 8 * 1024 * 1024, largest


def test_a_restarting_checkpoint_gives_up_on_a_reader_that_stays(
    sqlite_store: SqliteTaskStore, data_dir: Path
) -> None:
    """While every write is held for it, it does not wait on a reader for SQLite's growing
    busy sleeps: within its patience it reports that it could not finish."""
    run(sqlite_store.create("peer-a", key("m-1"), make_task("t-1")))
    path = data_dir / DB_FILENAME
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM tasks").fetchone() == (1,)
        assert checkpoint_wal(path, "RESTART", patience=0.0) is False
        reader.execute("COMMIT")
        assert checkpoint_wal(path, "RESTART", patience=0.0) is True
    finally:
        reader.close()


def test_a_failed_commit_acknowledges_nothing(data_dir: Path) -> None:
    db = open_database(data_dir)
    store = SqliteTaskStore(db)
    db.writer.close()  # every commit now fails, as on a full disk
    try:
        with pytest.raises(StoreError):
            run(store.create("peer-a", key("m-1"), make_task("t-1")))
    finally:
        db.close()
    fresh = open_database(data_dir)
    try:
        assert run(SqliteTaskStore(fresh).get("peer-a", "t-1")) is None
        assert run(SqliteTaskStore(fresh).message_key("peer-a", "m-1")) is None
    finally:
        fresh.close()


_KILLED_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from synthorg.generated.models import V1Task
    from synthorg.store.select import open_stores
    from synthorg.store.tasks import MessageKey
    stores = open_stores(Path(sys.argv[1]))  # the backend SYNTHORG_DATABASE_URL selects
    task = V1Task.model_validate_json(sys.argv[2])
    asyncio.run(stores.tasks.create("peer-a", MessageKey("m-1", "d-1"), task))
    print("acknowledged", flush=True)
    sys.stdin.read()  # wait to be killed; never close the store cleanly
    """
)


def test_acknowledged_task_survives_sigkill(handles: Handles) -> None:
    task = make_task("t-durable", state="working")
    env = {key: value for key, value in os.environ.items() if key != "SYNTHORG_DATABASE_URL"}
    if handles.url is not None:
        env |= {"SYNTHORG_DATABASE_URL": handles.url, "SYNTHORG_SECRET_KEY": KEY}
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(handles.data_dir),
         task.model_dump_json(by_alias=True, exclude_none=True)],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "acknowledged"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()

    store = handles.open()
    assert run(store.get("peer-a", "t-durable")) == StoredTask(task, 0)
    with pytest.raises(KeyRecorded):
        run(store.create("peer-a", key("m-1"), make_task("t-new")))
    # Its runner never held a lease (or it ran out): the unfinished task is failed.
    assert run(store.recover(NOW)) == 1
    recovered = run(store.get("peer-a", "t-durable"))
    assert recovered is not None and recovered.task.status.state == "TASK_STATE_FAILED"


def test_adopt_takes_over_the_resumable_tasks_of_runners_gone(handles: Handles) -> None:
    """What `adopt` takes over is this runner's: `recover` spares it, and a later runner
    sees it as this one's while this one lives."""
    gone = handles.open(Runner("runner-gone"))
    for name in ("t-forwarded", "t-local"):
        run(gone.create("peer-a", key(f"m-{name}"), make_task(name, "working")))
    run(gone.create("peer-a", key("m-parked"), make_task("t-parked", "input-required")))
    store = handles.open(Runner("runner-live", lease_seconds=60))
    run(store.heartbeat())
    adopted = run(store.adopt(lambda task: task.id != "t-local", others_gone=True))
    assert [(peer, stored.task.id, stored.version) for peer, stored in adopted] == [
        ("peer-a", "t-forwarded", 0)
    ]
    assert run(store.recover(NOW, others_gone=True)) == 1  # t-local only
    forwarded = run(store.get("peer-a", "t-forwarded"))
    assert forwarded is not None and forwarded.task.status.state == "TASK_STATE_WORKING"
    assert run(store.adopt(lambda task: True, others_gone=True)) == []  # already its own
    other = handles.open(Runner("runner-other", lease_seconds=60))
    assert run(other.adopt(lambda task: True)) == []  # runner-live holds its lease
