"""SqliteTaskStore: idempotency keys, ownership, recovery, ordering and kill -9 durability."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import textwrap
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from synthorg.store.db import Database, open_database
from synthorg.store.tasks import RESTART_MESSAGE, SqliteTaskStore, TaskStore

T = TypeVar("T")
REPO_ROOT = Path(__file__).resolve().parents[2]
NOW = "2030-01-01T00:00:00.000Z"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def make_task(task_id: str, state: str = "submitted", context_id: str = "ctx-1") -> dict[str, Any]:
    return {
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
    }


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def conn(data_dir: Path) -> Iterator[Database]:
    db = open_database(data_dir)
    yield db
    db.close()


@pytest.fixture
def store(conn: Database) -> SqliteTaskStore:
    return SqliteTaskStore(conn)


def test_implements_the_protocol(store: SqliteTaskStore) -> None:
    protocol: TaskStore = store  # checked by mypy; a PostgreSQL store must fit the same slot
    assert protocol is store


def test_create_and_get_round_trip(store: SqliteTaskStore) -> None:
    task = make_task("t-1")
    created, digest = run(store.create("peer-a", "m-1", "d-1", task))
    assert (created, digest) == (task, "d-1")
    assert run(store.get("peer-a", "t-1")) == task
    assert run(store.get("peer-a", "missing")) is None


def test_other_peers_task_is_indistinguishable_from_missing(store: SqliteTaskStore) -> None:
    run(store.create("peer-a", "m-1", "d-1", make_task("t-1")))
    assert run(store.get("peer-b", "t-1")) is None


def test_create_is_idempotent_per_peer_and_message_id(store: SqliteTaskStore) -> None:
    original = make_task("t-1")
    run(store.create("peer-a", "m-1", "d-1", original))
    # A retry (same digest) and a reuse (other digest) both get the first task and its digest.
    assert run(store.create("peer-a", "m-1", "d-1", make_task("t-2"))) == (original, "d-1")
    assert run(store.create("peer-a", "m-1", "d-other", make_task("t-3"))) == (original, "d-1")
    assert run(store.get("peer-a", "t-2")) is None
    assert run(store.get("peer-a", "t-3")) is None
    # The same messageId from another peer is an independent key.
    other = make_task("t-4")
    assert run(store.create("peer-b", "m-1", "d-1", other)) == (other, "d-1")
    assert len(run(store.list())) == 2


def test_create_returns_the_saved_state_of_an_existing_task(store: SqliteTaskStore) -> None:
    task = make_task("t-1")
    run(store.create("peer-a", "m-1", "d-1", task))
    task["status"] = {"state": "completed", "timestamp": NOW}
    run(store.save("peer-a", task))
    existing, _ = run(store.create("peer-a", "m-1", "d-1", make_task("t-2")))
    assert existing["status"]["state"] == "completed"


def test_claim_message(store: SqliteTaskStore) -> None:
    run(store.create("peer-a", "m-1", "d-1", make_task("t-1")))
    assert run(store.claim_message("peer-a", "m-2", "d-2", "t-1")) is None
    assert run(store.claim_message("peer-a", "m-2", "d-9", "t-1")) == ("t-1", "d-2")
    # Keys of creates and continuations share one namespace.
    assert run(store.claim_message("peer-a", "m-1", "d-x", "t-1")) == ("t-1", "d-1")
    assert run(store.create("peer-a", "m-2", "d-2", make_task("t-5")))[1] == "d-2"
    assert run(store.get("peer-a", "t-5")) is None
    assert run(store.claim_message("peer-b", "m-2", "d-2", "t-9")) is None


def test_save_updates_only_the_owners_task(store: SqliteTaskStore, conn: Database) -> None:
    task = make_task("t-1")
    run(store.create("peer-a", "m-1", "d-1", task))
    task["status"] = {"state": "working", "timestamp": NOW}
    task["artifacts"].append({"artifactId": "a-1", "parts": [{"kind": "text", "text": "x"}]})
    run(store.save("peer-a", task))
    assert run(store.get("peer-a", "t-1")) == task
    assert conn.execute("SELECT state FROM tasks WHERE id = 't-1'").fetchone()[0] == "working"

    hijack = make_task("t-1", state="canceled")
    with pytest.raises(LookupError):
        run(store.save("peer-b", hijack))
    assert run(store.get("peer-a", "t-1")) == task
    with pytest.raises(ValueError, match="contextId"):
        run(store.save("peer-a", {"id": "t-1"}))


def test_recover_fails_only_submitted_and_working(store: SqliteTaskStore) -> None:
    states = [
        "submitted",
        "working",
        "input-required",
        "auth-required",
        "completed",
        "failed",
        "canceled",
        "rejected",
    ]
    for i, state in enumerate(states):
        run(store.create("peer-a", f"m-{i}", "d", make_task(f"t-{state}", state, f"c-{i}")))
    message_ids: set[str] = set()
    before = {state: make_task(f"t-{state}", state, f"c-{i}") for i, state in enumerate(states)}

    assert run(store.recover(NOW)) == 2
    for state in ("submitted", "working"):
        task = run(store.get("peer-a", f"t-{state}"))
        assert task is not None
        status = task["status"]
        assert status["state"] == "failed" and status["timestamp"] == NOW
        message = status["message"]
        assert message["kind"] == "message" and message["role"] == "agent"
        assert message["parts"] == [{"kind": "text", "text": RESTART_MESSAGE}]
        assert message["taskId"] == f"t-{state}"
        assert message["contextId"] == before[state]["contextId"]
        message_ids.add(message["messageId"])
        assert task["history"] == before[state]["history"]
    for state in states[2:]:
        assert run(store.get("peer-a", f"t-{state}")) == before[state]
    assert run(store.recover(NOW)) == 0
    assert len(message_ids) == 2 and "" not in message_ids


def test_list_newest_first_with_peer_filter_and_limit(store: SqliteTaskStore) -> None:
    for i in range(5):
        peer = "peer-a" if i % 2 == 0 else "peer-b"
        run(store.create(peer, f"m-{i}", "d", make_task(f"t-{i}")))
    assert [t["id"] for t in run(store.list())] == ["t-4", "t-3", "t-2", "t-1", "t-0"]
    assert [t["id"] for t in run(store.list("peer-a"))] == ["t-4", "t-2", "t-0"]
    assert [t["id"] for t in run(store.list(limit=2))] == ["t-4", "t-3"]
    assert run(store.list("nobody")) == []
    with pytest.raises(ValueError):
        run(store.list(limit=0))


def test_second_connection_sees_writes_immediately(store: SqliteTaskStore, data_dir: Path) -> None:
    other_conn = open_database(data_dir)
    try:
        other = SqliteTaskStore(other_conn)
        assert run(other.get("peer-a", "t-1")) is None
        task = make_task("t-1")
        run(store.create("peer-a", "m-1", "d-1", task))
        assert run(other.get("peer-a", "t-1")) == task
        task["status"]["state"] = "completed"
        run(store.save("peer-a", task))
        assert run(other.get("peer-a", "t-1")) == task
    finally:
        other_conn.close()


def test_concurrent_creates_of_one_key_yield_one_task(store: SqliteTaskStore) -> None:
    async def race() -> list[tuple[dict[str, Any], str]]:
        return await asyncio.gather(
            *(store.create("peer-a", "m-1", f"d-{i}", make_task(f"t-{i}")) for i in range(10))
        )

    results = run(race())
    winners = {task["id"] for task, _ in results}
    assert len(winners) == 1
    assert len({digest for _, digest in results}) == 1
    assert len(run(store.list())) == 1


_KILLED_WRITER = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from synthorg.store.db import open_database
    from synthorg.store.tasks import SqliteTaskStore
    store = SqliteTaskStore(open_database(Path(sys.argv[1])))
    asyncio.run(store.create("peer-a", "m-1", "d-1", json.loads(sys.argv[2])))
    print("acknowledged", flush=True)
    sys.stdin.read()  # wait to be killed; never close the database cleanly
    """
)


def test_acknowledged_task_survives_sigkill(data_dir: Path) -> None:
    task = make_task("t-durable", state="working")
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(data_dir), json.dumps(task)],
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
        assert run(store.get("peer-a", "t-durable")) == task
        assert run(store.create("peer-a", "m-1", "d-1", make_task("t-new"))) == (task, "d-1")
        # On the next start the unfinished task is failed, not left dangling.
        assert run(store.recover()) == 1
        recovered = run(store.get("peer-a", "t-durable"))
        assert recovered is not None and recovered["status"]["state"] == "failed"
    finally:
        fresh.close()
