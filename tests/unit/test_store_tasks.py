"""The task store's contract: idempotency keys, ownership, compare-and-set writes, atomic
key-and-task commits, group commit, recovery, ordering and kill -9 durability (SQLite)."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from synthorg.errors import StoreError, TaskNotFound, VersionConflict
from synthorg.generated.models import Artifact, Task, TaskStatus, TextPart
from synthorg.store.sqlite.database import Database, open_database
from synthorg.store.sqlite.tasks import SqliteTaskStore
from synthorg.store.tasks import RESTART_MESSAGE, KeyRecorded, MessageKey, StoredTask, TaskStore

T = TypeVar("T")
REPO_ROOT = Path(__file__).resolve().parents[2]
NOW = "2030-01-01T00:00:00.000Z"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def make_task(task_id: str, state: str = "submitted", context_id: str = "ctx-1") -> Task:
    return Task.model_validate({
        "kind": "task",
        "id": task_id,
        "contextId": context_id,
        "status": {"state": state, "timestamp": "2025-01-01T00:00:00.000Z"},
        "history": [
            {
                "kind": "message",
                "role": "user",
                "messageId": f"m-{task_id}",
                "parts": [{"kind": "text", "text": "héllo ✓"}],
                "taskId": task_id,
                "contextId": context_id,
            }
        ],
        "artifacts": [],
        "metadata": {"n": 1},
    })


def key(message_id: str, digest: str = "d-1") -> MessageKey:
    return MessageKey(message_id, digest)


def with_state(task: Task, state: str) -> Task:
    return task.model_copy(update={"status": TaskStatus.model_validate({"state": state})})


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def db(data_dir: Path) -> Iterator[Database]:
    database = open_database(data_dir)
    yield database
    database.close()


@pytest.fixture
def store(db: Database) -> SqliteTaskStore:
    return SqliteTaskStore(db)


def test_implements_the_protocol(store: SqliteTaskStore) -> None:
    protocol: TaskStore = store  # checked by mypy; a PostgreSQL store must fit the same slot
    assert protocol is store


def test_create_and_get_round_trip(store: SqliteTaskStore) -> None:
    task = make_task("t-1")
    assert run(store.create("peer-a", key("m-1"), task)) == StoredTask(task, 0)
    assert run(store.get("peer-a", "t-1")) == StoredTask(task, 0)
    assert run(store.get("peer-a", "missing")) is None
    assert run(store.message_key("peer-a", "m-1")) == MessageKey("m-1", "d-1", "t-1")
    assert run(store.message_key("peer-a", "m-2")) is None


def test_other_peers_task_is_indistinguishable_from_missing(store: SqliteTaskStore) -> None:
    run(store.create("peer-a", key("m-1"), make_task("t-1")))
    assert run(store.get("peer-b", "t-1")) is None
    assert run(store.message_key("peer-b", "m-1")) is None


def test_a_recorded_key_writes_nothing_and_names_its_task(store: SqliteTaskStore) -> None:
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


def test_update_compares_the_version_it_read(store: SqliteTaskStore) -> None:
    task = make_task("t-1")
    run(store.create("peer-a", key("m-1"), task))
    working = with_state(task, "working")
    assert run(store.update("peer-a", working, 0)) == StoredTask(working, 1)
    with pytest.raises(VersionConflict):  # a writer that read version 0 lost the race
        run(store.update("peer-a", with_state(task, "canceled"), 0))
    assert run(store.get("peer-a", "t-1")) == StoredTask(working, 1)
    done = working.model_copy(update={"artifacts": [
        Artifact(artifactId="a-1", parts=[TextPart(kind="text", text="x")])
    ]})
    assert run(store.update("peer-a", done, 1)).version == 2


def test_update_touches_only_the_owners_task(store: SqliteTaskStore) -> None:
    task = make_task("t-1")
    run(store.create("peer-a", key("m-1"), task))
    with pytest.raises(TaskNotFound):
        run(store.update("peer-b", with_state(task, "canceled"), 0))
    with pytest.raises(TaskNotFound):
        run(store.update("peer-a", make_task("t-missing"), 0))
    assert run(store.get("peer-a", "t-1")) == StoredTask(task, 0)


def test_a_follow_up_key_commits_with_its_update_or_not_at_all(store: SqliteTaskStore) -> None:
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


def test_one_failed_job_does_not_spoil_its_batch(store: SqliteTaskStore) -> None:
    async def batch() -> list[Any]:
        return await asyncio.gather(
            store.create("peer-a", key("m-1"), make_task("t-1")),
            store.create("peer-a", key("m-1"), make_task("t-2")),  # same key: refused
            store.create("peer-a", key("m-3"), make_task("t-3")),
            return_exceptions=True,
        )

    first, second, third = run(batch())
    assert isinstance(first, StoredTask) and isinstance(third, StoredTask)
    assert isinstance(second, KeyRecorded)
    assert {t.id for t in run(store.list())} == {"t-1", "t-3"}


def test_recover_fails_only_submitted_and_working(store: SqliteTaskStore) -> None:
    states = [
        "submitted", "working", "input-required", "auth-required",
        "completed", "failed", "canceled", "rejected",
    ]
    before = {state: make_task(f"t-{state}", state, f"c-{i}") for i, state in enumerate(states)}
    for i, state in enumerate(states):
        run(store.create("peer-a", key(f"m-{i}", "d"), before[state]))
    assert run(store.recover(NOW)) == 2
    message_ids: set[str] = set()
    for state in ("submitted", "working"):
        stored = run(store.get("peer-a", f"t-{state}"))
        assert stored is not None and stored.version == 1
        status = stored.task.status
        assert status.state == "failed" and status.timestamp == NOW
        message = status.message
        assert message is not None and message.role == "agent"
        assert message.parts == [TextPart(kind="text", text=RESTART_MESSAGE)]
        assert (message.taskId, message.contextId) == (f"t-{state}", before[state].contextId)
        message_ids.add(message.messageId)
        assert stored.task.history == before[state].history
    for state in states[2:]:
        assert run(store.get("peer-a", f"t-{state}")) == StoredTask(before[state], 0)
    assert run(store.recover(NOW)) == 0
    assert len(message_ids) == 2


def test_list_newest_first_with_peer_filter_and_limit(store: SqliteTaskStore) -> None:
    for i in range(5):
        peer = "peer-a" if i % 2 == 0 else "peer-b"
        run(store.create(peer, key(f"m-{i}", "d"), make_task(f"t-{i}")))
    assert [t.id for t in run(store.list())] == ["t-4", "t-3", "t-2", "t-1", "t-0"]
    assert [t.id for t in run(store.list("peer-a"))] == ["t-4", "t-2", "t-0"]
    assert [t.id for t in run(store.list(limit=2))] == ["t-4", "t-3"]
    assert run(store.list("nobody")) == []
    with pytest.raises(ValueError):
        run(store.list(limit=0))


def test_a_second_process_sees_writes_at_once(store: SqliteTaskStore, data_dir: Path) -> None:
    other_db = open_database(data_dir)
    try:
        other = SqliteTaskStore(other_db)
        assert run(other.get("peer-a", "t-1")) is None
        task = make_task("t-1")
        run(store.create("peer-a", key("m-1"), task))
        assert run(other.get("peer-a", "t-1")) == StoredTask(task, 0)
        # ... and compare-and-set holds between the two handles.
        run(other.update("peer-a", with_state(task, "completed"), 0))
        with pytest.raises(VersionConflict):
            run(store.update("peer-a", with_state(task, "canceled"), 0))
    finally:
        other_db.close()


def test_concurrent_creates_of_one_key_yield_one_task(store: SqliteTaskStore) -> None:
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


def test_a_write_waits_for_another_writer_without_blocking_the_loop(
    store: SqliteTaskStore, data_dir: Path
) -> None:
    """Another process holds the write lock: the write waits on the event loop (other work
    goes on), then commits once the lock is free."""
    holder = sqlite3.connect(data_dir / "synthorg.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")

    async def scenario() -> tuple[StoredTask, int]:
        write = asyncio.ensure_future(store.create("peer-a", key("m-1"), make_task("t-1")))
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
    store: SqliteTaskStore, data_dir: Path
) -> None:
    """A read left unfinished would pin the WAL: it would grow without end under load."""
    for i in range(50):
        run(store.create("peer-a", key(f"m-{i}"), make_task(f"t-{i}")))
        assert run(store.get("peer-a", "missing")) is None
        assert run(store.get("peer-a", f"t-{i}")) is not None  # a row read last
    other = sqlite3.connect(data_dir / "synthorg.db", isolation_level=None)
    try:
        busy, log, done = other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        other.close()
    assert busy == 0 and log == done
    assert (data_dir / "synthorg.db-wal").stat().st_size == 0


def test_the_wal_stays_bounded_under_steady_writes(
    store: SqliteTaskStore, db: Database, data_dir: Path
) -> None:
    """Checkpoints keep up with writes that never pause: the WAL starts over, it does not
    grow with every commit."""
    db.checkpoint_every = 50

    async def steady() -> int:
        largest = 0
        for i in range(400):
            await store.create("peer-a", key(f"m-{i}"), make_task(f"t-{i}"))
            await store.get("peer-a", f"t-{i}")
            largest = max(largest, (data_dir / "synthorg.db-wal").stat().st_size)
        return largest

    largest = run(steady())
    # 400 tasks of ~1 KiB over 400 commits: the WAL holds about a checkpoint's worth.
    assert largest < 2 * 1024 * 1024, largest


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
    from synthorg.generated.models import Task
    from synthorg.store.sqlite.database import open_database
    from synthorg.store.sqlite.tasks import SqliteTaskStore
    from synthorg.store.tasks import MessageKey
    store = SqliteTaskStore(open_database(Path(sys.argv[1])))
    task = Task.model_validate_json(sys.argv[2])
    asyncio.run(store.create("peer-a", MessageKey("m-1", "d-1"), task))
    print("acknowledged", flush=True)
    sys.stdin.read()  # wait to be killed; never close the database cleanly
    """
)


def test_acknowledged_task_survives_sigkill(data_dir: Path) -> None:
    task = make_task("t-durable", state="working")
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(data_dir),
         task.model_dump_json(by_alias=True, exclude_none=True)],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
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

    fresh = open_database(data_dir)
    try:
        store = SqliteTaskStore(fresh)
        assert run(store.get("peer-a", "t-durable")) == StoredTask(task, 0)
        with pytest.raises(KeyRecorded):
            run(store.create("peer-a", key("m-1"), make_task("t-new")))
        # On the next start the unfinished task is failed, not left dangling.
        assert run(store.recover(NOW)) == 1
        recovered = run(store.get("peer-a", "t-durable"))
        assert recovered is not None and recovered.task.status.state == "failed"
    finally:
        fresh.close()
