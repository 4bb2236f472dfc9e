"""Streams across replicas: two node processes on one PostgreSQL database.

A task streamed on one replica is followed, resumed and canceled through the other: the
durable event log is what they share (each replica polls it; a write in the replica's own
process wakes its followers at once).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from tests.integration.helpers import cancel_task, expect_result
from tests.integration.live import LiveNode
from tests.integration.test_streams_live import (
    KEY,
    PEER,
    events_of,
    open_stream,
    stream_message,
)
from tests.support.node import cli

CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{PEER}]
agents:
  - id: slow
    name: Slow writer
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {{seconds: 60, chunks: 60}}
"""


@pytest.fixture(scope="module")
def pair(
    tmp_path_factory: pytest.TempPathFactory, postgres_url: str
) -> Iterator[tuple[LiveNode, LiveNode]]:
    root: Path = tmp_path_factory.mktemp("stream-replicas")
    env = {
        "SYNTHORG_DATABASE_URL": postgres_url,
        "SYNTHORG_SECRET_KEY": Fernet.generate_key().decode(),
        "SYNTHORG_ADMIN_TOKEN": "stream-replicas-admin-token",
    }
    cli(root / "cli", "peers", "add", PEER, "--endpoint", "http://127.0.0.1:9", stdin=KEY,
        env=env)
    with LiveNode(root / "a", CONFIG, env=env) as first, \
            LiveNode(root / "b", CONFIG, env=env) as second:
        yield first, second


def test_a_task_streamed_on_one_replica_is_resumed_and_canceled_on_the_other(
    pair: tuple[LiveNode, LiveNode],
) -> None:
    first, second = pair
    with first.client(PEER, KEY) as on_first, second.client(PEER, KEY) as on_second:
        with open_stream(on_first, "message/stream", stream_message("slow", "far")) as response:
            seen = list(events_of(response, limit=3))  # task, working, first progress
        task_id = seen[0].result["id"]
        with open_stream(on_second, "tasks/resubscribe", {"id": task_id},
                         {"Last-Event-ID": str(seen[-1].id)}) as response:
            resumed = events_of(response)
            later = next(resumed)  # written by the agent on the first replica
            assert later.id > seen[-1].id
            # Canceled through the other replica: the agent's next report finds it final.
            canceled = expect_result(cancel_task(on_second, task_id))
            assert canceled["status"]["state"] == "canceled"
            rest = list(resumed)
        assert rest[-1].result["status"]["state"] == "canceled" and rest[-1].result["final"]
        # The stream of the first replica, resumed there, ends the same way.
        with open_stream(on_first, "tasks/resubscribe", {"id": task_id},
                         {"Last-Event-ID": str(later.id)}) as response:
            tail = list(events_of(response))
        assert tail[-1].result["status"]["state"] == "canceled"

