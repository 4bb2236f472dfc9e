"""Resuming the tasks a node takes over from runners that are gone, on a real node in process
(real SQLite, a real resumable agent: the slow writer of examples/).

Each resumption stands on its own: a task that moved on between its adoption and its
resumption (canceled by another process, say) is reported and skipped, and neither the
node's start nor its maintenance loop (heartbeats, sweeps) ends with it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from synthorg.api.serve import boot_shared
from synthorg.clock import new_id
from synthorg.generated.constants import (
    TASK_STATE_CANCELED,
    TASK_STATE_COMPLETED,
    TASK_STATE_SUBMITTED,
)
from synthorg.generated.models import V1Message, V1Task, V1TaskStatus, V1TextPart
from synthorg.node import Node, prepare
from synthorg.observability.events import a2a as events
from synthorg.observability.log import LOGGER_NAME
from synthorg.store.select import open_stores
from synthorg.store.tasks import MessageKey, Runner
from synthorg.tasks.events import ends_stream

PEER = "peer-a"
CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{PEER}]
agents:
  - id: writer
    name: Writer
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {{seconds: 0, chunks: 2}}
"""
LEASE = 0.2  # seconds: the node sweeps for runners gone this often
WAIT = 20.0


class Events(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[dict[str, object]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(record.getMessage()))

    def named(self, name: str) -> list[dict[str, object]]:
        return [line for line in self.lines if line.get("event") == name]


@pytest.fixture
def captured() -> Iterator[Events]:
    logger = logging.getLogger(LOGGER_NAME)
    handler, level = Events(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    (tmp_path / "config.yaml").write_text(CONFIG)
    return tmp_path


async def left_unstarted(data_dir: Path, runner: str, text: str) -> str:
    """A writer task as a process leaves it when it dies after storing the task and before
    its agent started (still submitted); its id."""
    stores = open_stores(data_dir, Runner(runner))
    try:
        task_id, context_id = new_id(), new_id()
        message = V1Message(
            messageId=new_id(), role="ROLE_USER",
            parts=[V1TextPart(text=text)], taskId=task_id, contextId=context_id,
        )
        task = V1Task(
            id=task_id, contextId=context_id,
            status=V1TaskStatus(state=TASK_STATE_SUBMITTED), history=[message], artifacts=[],
            metadata={"agentId": "writer"},
        )
        await stores.tasks.create(PEER, MessageKey(message.messageId, "digest"), task)
        return task_id
    finally:
        stores.close()


async def final_task(node: Node, task_id: str) -> V1Task:
    """The task once its stream ends (followed, not polled)."""

    async def follow() -> None:
        async for item in node.tasks.resubscribe(PEER, task_id, None):
            if ends_stream(item.event):
                return

    await asyncio.wait_for(follow(), WAIT)
    return await node.tasks.get(PEER, task_id, None)


def test_a_task_canceled_between_adoption_and_resumption_ends_neither_start_nor_sweeps(
    data_dir: Path, captured: Events
) -> None:
    async def scenario() -> None:
        canceled = await left_unstarted(data_dir, "gone-1", "cancel me")
        kept = await left_unstarted(data_dir, "gone-1", "keep me")
        node = Node.build(data_dir, stores=open_stores(data_dir, Runner(lease_seconds=LEASE)))
        other = Node.build(data_dir)  # another process on the same data dir
        try:
            await node.recover(others_gone=True)  # both adopted, as at start-up
            await other.tasks.cancel(PEER, canceled)  # ... and one canceled meanwhile
            await node.start_background()  # resumes what it adopted
            assert (await final_task(node, kept)).status.state == TASK_STATE_COMPLETED
            assert (await node.tasks.get(PEER, canceled, None)).status.state == TASK_STATE_CANCELED
            [failed] = captured.named(events.TASK_RESUME_FAILED)
            assert failed["task_id"] == canceled and failed["peer_name"] == PEER
            # The maintenance loop goes on: a later sweep takes over a task another runner
            # left, and resumes it to its end.
            later = await left_unstarted(data_dir, "gone-2", "later")
            assert (await final_task(node, later)).status.state == TASK_STATE_COMPLETED
            assert node._background is not None and not node._background.done()
        finally:
            await node.stop_background()
            node.close()
            other.close()

    asyncio.run(scenario())


def test_a_replica_holds_its_lease_before_it_takes_over_at_start(
    tmp_path: Path, postgres_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL a starting replica takes over (adopts) the tasks of runners that are
    gone before it serves. If its own runner held no lease yet, those tasks would look left
    behind to the sweep of every other replica, which would take them over too: two
    replicas resuming one task, writing each chunk twice."""
    monkeypatch.setenv("SYNTHORG_DATABASE_URL", postgres_database)
    monkeypatch.setenv("SYNTHORG_SECRET_KEY", Fernet.generate_key().decode())
    dirs = []
    for name in ("gone", "starting", "sweeping"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.yaml").write_text(CONFIG)
        dirs.append(tmp_path / name)

    async def scenario() -> None:
        task_id = await left_unstarted(dirs[0], "gone-replica", "take me over once")
        starting = open_stores(dirs[1], Runner(lease_seconds=60), migrate=False)
        sweeping = open_stores(dirs[2], Runner(lease_seconds=60), migrate=False)
        try:
            # The start-up work of a replica (reach the store, migrate, build, recover),
            # just before it starts serving and resuming.
            await boot_shared(prepare(dirs[1]), starting, "127.0.0.1", 0, 1, pytest.fail)
            await sweeping.tasks.heartbeat()
            # Another live replica's sweep, at that moment: the task is taken.
            assert await sweeping.tasks.adopt(lambda task: True) == []
            assert await sweeping.tasks.recover("2030-01-01T00:00:00.000Z") == 0
            stored = await sweeping.tasks.get(PEER, task_id)
            assert stored is not None and stored.task.status.state == TASK_STATE_SUBMITTED
        finally:
            starting.close()
            sweeping.close()

    asyncio.run(scenario())
