"""DESIGN §5 durability: acknowledged tasks survive SIGKILL; unfinished work fails on restart.

One node is started, given a parked and a completed task, killed with SIGKILL, given a task
row left `working` (written through the store while the node is down, as a crash mid-run
would leave it), and restarted on the same data dir.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from synthorg.dialects.objects import task_v1
from synthorg.generated.models import Task
from synthorg.store.sqlite.database import open_database
from synthorg.store.sqlite.tasks import SqliteTaskStore
from synthorg.store.tasks import MessageKey
from tests.integration.conftest import AGENTS_YAML, KEY_A, PEER_A, api_key_headers, peer_client
from tests.integration.helpers import (
    TASK_TERMINAL,
    Json,
    create_task,
    expect_error,
    expect_result,
    get_task,
    message,
    park_task,
    send,
)
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

CONFIG = f"a2a:\n  enabled: true\n  allowed_peers: [{PEER_A}]\n{AGENTS_YAML}"


@dataclass
class Restarted:
    node: LiveNode
    client: httpx.Client
    parked: Json
    parked_for_follow_up: Json
    completed: Json
    completed_message: Json
    working_id: str


def write_working_task(data_dir: Path, peer: str) -> str:
    """A task row in state `working`, as a node killed mid-execution leaves it."""
    task_id = str(uuid.uuid4())
    task = {
        "kind": "task",
        "id": task_id,
        "contextId": str(uuid.uuid4()),
        "status": {"state": "working", "timestamp": "2026-01-01T00:00:00.000Z"},
        "history": [{**message("interrupted"), "taskId": task_id}],
        "artifacts": [],
        "metadata": {"agentId": "echo"},
    }
    db = open_database(data_dir)
    try:
        key = MessageKey(f"msg-{task_id}", "0" * 64)
        stored = task_v1(Task.model_validate(task))  # the store keeps A2A 1.0 tasks
        asyncio.run(SqliteTaskStore(db).create(peer, key, stored))
    finally:
        db.close()
    return task_id


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restarted]:
    data_dir = tmp_path_factory.mktemp("durable")
    add_peer(data_dir, PEER_A, KEY_A)
    node = LiveNode(data_dir, CONFIG)
    try:
        node.start()
        with peer_client(node, api_key_headers(PEER_A, KEY_A)) as client:
            parked, parked_for_follow_up = park_task(client), park_task(client)
            completed_message = message("survive kill -9")
            completed = expect_result(send(client, completed_message))
        node.kill()
        working_id = write_working_task(data_dir, PEER_A)
        node.start()
        with peer_client(node, api_key_headers(PEER_A, KEY_A)) as client:
            yield Restarted(
                node, client, parked, parked_for_follow_up, completed, completed_message, working_id
            )
    finally:
        node.stop()


def test_parked_task_survives_sigkill(restarted: Restarted) -> None:
    got = expect_result(get_task(restarted.client, restarted.parked["id"]))
    assert got == restarted.parked
    assert got["status"]["state"] == "input-required"


def test_completed_task_survives_sigkill_with_its_artifacts(restarted: Restarted) -> None:
    got = expect_result(get_task(restarted.client, restarted.completed["id"]))
    assert got == restarted.completed
    assert got["artifacts"][0]["parts"][0]["text"] == "survive kill -9"


def test_task_left_working_is_failed_after_restart(restarted: Restarted) -> None:
    got = expect_result(get_task(restarted.client, restarted.working_id))
    assert got["status"]["state"] == "failed"
    assert got["status"]["message"]["role"] == "agent"


def test_task_failed_by_recovery_is_final(restarted: Restarted) -> None:
    follow = message("too late", task_id=restarted.working_id)
    expect_error(send(restarted.client, follow), code=TASK_TERMINAL, request_id=1)


def test_restart_reports_the_recovered_task(restarted: Restarted) -> None:
    assert restarted.node.wait_for_event("a2a.task.recovered")["count"] == 1


def test_idempotency_key_survives_sigkill(restarted: Restarted) -> None:
    again = expect_result(send(restarted.client, restarted.completed_message))
    assert again["id"] == restarted.completed["id"]


def test_parked_task_can_still_be_continued_after_restart(restarted: Restarted) -> None:
    follow = message("after restart", task_id=restarted.parked_for_follow_up["id"])
    assert expect_result(send(restarted.client, follow))["status"]["state"] == "input-required"


def test_new_tasks_are_accepted_after_restart(restarted: Restarted) -> None:
    assert create_task(restarted.client, "fresh")["status"]["state"] == "completed"
