"""An open stream ends once its caller is no longer admitted: the peer removed from the
catalog (by the CLI, as an operator would) or given a new secret. The stream's last event
is the refusal, and `a2a.stream.revoked` says why; the peer's next request is refused too."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import RPC_PATH, envelope, message
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer
from tests.support.node import cli

PEER, KEY = "peer-revoked", "key-revoked-4b8d2f6a1c3e"
REVOKED = "a2a.stream.revoked"

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
      options: {{seconds: 600, chunks: 600}}
"""


def data_lines(lines: Iterator[str]) -> list[dict[str, Any]]:
    return [json.loads(line[len("data:"):]) for line in lines if line.startswith("data:")]


def change_rekey(data_dir: Path) -> None:
    add_peer(data_dir, PEER, "key-revoked-new-9c1e7a3b5d2f")


def change_remove(data_dir: Path) -> None:
    cli(data_dir, "peers", "remove", PEER)


@pytest.mark.parametrize("change,reason", [
    (change_remove, "no_credential_record"),
    (change_rekey, "credential_mismatch"),
])
def test_a_stream_ends_when_its_peer_is_removed_or_rekeyed(
    tmp_path: Path, change: Callable[[Path], None], reason: str
) -> None:
    add_peer(tmp_path, PEER, KEY)
    with LiveNode(tmp_path, CONFIG) as node, node.client(PEER, KEY) as client:
        params = {"message": message("long", agent_id="slow")}
        with client.stream("POST", RPC_PATH, json=envelope("message/stream", params, "s-1"),
                           headers={"Accept": "text/event-stream"}) as response:
            lines = response.iter_lines()
            first = next(line for line in lines if line.startswith("data:"))
            assert json.loads(first[len("data:"):])["result"]["kind"] == "task"
            change(tmp_path)
            rest = data_lines(lines)  # the stream ends: this returns
        assert "error" in rest[-1] and rest[-1]["error"]["code"] == -32003
        assert all("result" in event for event in rest[:-1])
        event = node.wait_for_event(REVOKED, peer_name=PEER)
        assert event["reason"] == reason and event["status"] == 401
        refused = client.post(RPC_PATH, json=envelope("tasks/get", {"id": "x"}, 1))
        assert refused.status_code == 401
