"""An open stream ends once its caller is no longer admitted: the peer removed from the
catalog (by the CLI, as an operator would) or given a new secret. The stream's last event
is the refusal, and `a2a.stream.revoked` says why; the peer's next request is refused too."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from synthorg.generated.constants import (
    GATEWAY_REST_LIST_TASKS,
    GATEWAY_REST_SEND_STREAMING_MESSAGE,
)
from tests.integration.helpers import RPC_PATH, envelope, message, unique
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


REST_STREAM = GATEWAY_REST_SEND_STREAMING_MESSAGE.path
REST_TASKS = GATEWAY_REST_LIST_TASKS.path
V1_MESSAGE = {"role": "ROLE_USER", "parts": [{"text": "long"}], "metadata": {"agentId": "slow"}}


@pytest.mark.parametrize("change,reason", [
    (change_remove, "no_credential_record"),
    (change_rekey, "credential_mismatch"),
])
@pytest.mark.parametrize("version", ["0.3", "1.0"])
def test_a_stream_ends_when_its_peer_is_removed_or_rekeyed(
    tmp_path: Path, change: Callable[[Path], None], reason: str, version: str
) -> None:
    add_peer(tmp_path, PEER, KEY)
    if version == "1.0":
        method, params = "SendStreamingMessage", {"message": {**V1_MESSAGE,
                                                              "messageId": unique()}}
    else:
        method, params = "message/stream", {"message": message("long", agent_id="slow")}
    with LiveNode(tmp_path, CONFIG) as node, node.client(PEER, KEY) as client:
        with client.stream("POST", RPC_PATH, json=envelope(method, params, "s-1"),
                           headers={"Accept": "text/event-stream",
                                    "A2A-Version": version}) as response:
            lines = response.iter_lines()
            first = next(line for line in lines if line.startswith("data:"))
            assert "result" in json.loads(first[len("data:"):])
            change(tmp_path)
            rest = data_lines(lines)  # the stream ends: this returns
        error = rest[-1]["error"]
        assert error["code"] == -32003
        if version == "1.0":  # in 1.0's shape: error.data, an ErrorInfo naming it
            assert error["data"][0]["reason"] == "UNAUTHENTICATED"
        assert all("result" in event for event in rest[:-1])
        event = node.wait_for_event(REVOKED, peer_name=PEER)
        assert event["reason"] == reason and event["status"] == 401
        refused = client.post(RPC_PATH, json=envelope("tasks/get", {"id": "x"}, 1))
        assert refused.status_code == 401


@pytest.mark.parametrize("change,reason", [
    (change_remove, "no_credential_record"),
    (change_rekey, "credential_mismatch"),
])
def test_an_http_json_stream_ends_when_its_peer_is_removed_or_rekeyed(
    tmp_path: Path, change: Callable[[Path], None], reason: str
) -> None:
    """The HTTP+JSON binding's stream ends the same way, its last event a google.rpc.Status
    naming the refusal."""
    add_peer(tmp_path, PEER, KEY)
    body = {"message": {**V1_MESSAGE, "messageId": unique()}}
    with LiveNode(tmp_path, CONFIG) as node, node.client(PEER, KEY) as client:
        with client.stream("POST", REST_STREAM, json=body,
                           headers={"Accept": "text/event-stream"}) as response:
            assert response.status_code == 200
            lines = response.iter_lines()
            first = next(line for line in lines if line.startswith("data:"))
            assert "task" in json.loads(first[len("data:"):])  # a bare StreamResponse
            change(tmp_path)
            rest = data_lines(lines)  # the stream ends: this returns
        error = rest[-1]["error"]
        assert (error["code"], error["status"]) == (401, "UNAUTHENTICATED")
        assert error["details"][0]["reason"] == "UNAUTHENTICATED"
        assert all("error" not in event for event in rest[:-1])
        event = node.wait_for_event(REVOKED, peer_name=PEER)
        assert event["reason"] == reason and event["status"] == 401
        assert client.get(REST_TASKS).status_code == 401
