"""The official `a2a-sdk` 1.x, client and server, against our node in the A2A 1.0 dialect.

The 1.x SDK shares the `a2a` import name with the 0.3 SDK of the dev venv, so it lives in its
own virtualenv (`.venv-sdk1`, built by `make sdk1-venv`, which `make test` runs first) and is
driven as a subprocess (`sdk1_driver.py`). Both directions:

- its client resolves our card, picks our 1.0 interface (JSON-RPC, or HTTP+JSON when
  restricted to it) and sends, gets, lists and cancels,
  with our peer headers added by its own call interceptor; what it created reads the same
  through our 0.3 methods;
- our Delegator reads its card (1.0 only, no `url`), calls it in 1.0, and follows and cancels
  its tasks.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from synthorg.clock import utc_now
from synthorg.delegation.delegator import Delegator
from synthorg.delegation.errors import PeerRpcError
from synthorg.generated.models import V1TextPart
from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import Database, open_database
from synthorg.store.sqlite.delegations import SqliteDelegationStore
from tests.support.node import NodeProcess, cli
from tests.support.sdk1 import DRIVER, SDK1_PYTHON, needs_sdk1
from tests.support.sdk1 import sdk1_server as sdk1_peer

pytestmark = needs_sdk1

PEER, KEY = "sdk1-peer", "sdk1-peer-link-secret-5c1e9a"
CONFIG = f"""\
a2a:
  enabled: true
  node_name: node-b
  allowed_peers: [{PEER}]
agents:
  - id: echo
    name: Echo
    executor: {{kind: echo}}
    skills:
      - {{id: public-skill, name: Public, tags: [open]}}
      - {{id: peers-skill, name: Peers only, tags: [inner], visibility: peers}}
  - {{id: parker, name: Parker, executor: {{kind: park}}}}
"""


def driver(*args: str, timeout: float = 120) -> dict[str, Any]:
    done = subprocess.run(
        [str(SDK1_PYTHON), str(DRIVER), *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# -- the 1.x client calling our node ----------------------------------------------------------


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    data_dir: Path = tmp_path_factory.mktemp("sdk1-client")
    with socket.socket() as sock:  # a free port for the gRPC binding
        sock.bind(("127.0.0.1", 0))
        grpc_port = sock.getsockname()[1]
    with NodeProcess(data_dir, CONFIG + f"server: {{grpc_port: {grpc_port}}}\n") as running:
        cli(data_dir, "peers", "add", PEER, "--endpoint", "http://127.0.0.1:9", stdin=KEY)
        yield running


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
def test_the_1_x_client_sends_gets_lists_and_cancels(node: NodeProcess, binding: str) -> None:
    """Restricted to each of our card's bindings in turn: JSON-RPC, HTTP+JSON, gRPC (the
    card's GRPC interface, the SDK's gRPC transport)."""
    # This run's events only: the node serves every run, and the last one's closing 0.3
    # call may be written after this run began (lines go out in batches): by time, not count.
    since = utc_now()
    out = driver("client", node.url, PEER, KEY, binding)
    events = [event for event in node.events() if event["ts"] > since]
    echo = out["echo"]["task"]
    assert echo["status"]["state"] == "TASK_STATE_COMPLETED"
    assert echo["artifacts"][0]["parts"][0]["text"] == "hello from sdk 1.x"
    parked = out["parked"]
    assert parked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert out["got"]["id"] == parked["id"]
    assert out["got"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    listed = [task["id"] for task in out["listed"]["tasks"]]
    # Newest first, the caller's own (the streamed task came after these two).
    assert listed.index(parked["id"]) == listed.index(echo["id"]) - 1
    assert out["canceled"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert out["missing"] == "TaskNotFoundError"  # the SDK read our refusal as A2A's own
    # Streams, as its streaming client reads them.
    assert out["streamed"], out
    last = out["streamed"][-1]
    final = (last.get("statusUpdate") or last.get("task"))["status"]["state"]
    assert final == "TASK_STATE_COMPLETED"
    assert out["subscribed"][0]["task"]["id"] == parked["id"]
    # The extended card parses with the SDK's card type and carries the peers-only skill.
    assert {s["id"] for s in out["extended"]["skills"]} == {"public-skill", "peers-skill"}
    assert out["extended"]["capabilities"]["extendedAgentCard"] is True
    api_key = out["extended"]["securitySchemes"]["ApiKey"]["apiKeySecurityScheme"]
    assert (api_key["location"], api_key["name"]) == ("header", "X-API-Key")
    # It spoke 1.0 (its card choice), not 0.3 through the SDK's compatibility layer.
    methods = {event["method"] for event in events if event["event"] == "a2a.inbound.received"
               and (event.get("path") == "/grpc") == (binding == "GRPC")}
    assert {
        "SendMessage", "GetTask", "ListTasks", "CancelTask", "GetExtendedAgentCard",
        "SendStreamingMessage", "SubscribeToTask",
    } <= methods
    assert not methods & {"message/send", "tasks/get", "tasks/cancel"}
    if binding == "HTTP+JSON":  # by the card's HTTP+JSON interface, on its routes
        operations = {event["operation"] for event in events
                      if event["event"] == "a2a.inbound.completed"}
        assert {
            "gateway.rest.send_message", "gateway.rest.get_task", "gateway.rest.list_tasks",
            "gateway.rest.cancel_task", "gateway.rest.get_extended_agent_card",
            "gateway.rest.send_streaming_message", "gateway.rest.subscribe_to_task_post",
        } <= operations, operations
    # The same tasks through the 0.3 dialect.
    headers = {"X-A2A-Peer-Name": PEER, "X-API-Key": KEY}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": parked["id"]}}
    old = httpx.post(node.rpc_url, json=body, headers=headers, timeout=10).json()["result"]
    assert (old["kind"], old["status"]["state"]) == ("task", "canceled")
    assert old["history"][0]["messageId"] == parked["history"][0]["messageId"]


# -- our Delegator calling the 1.x server -------------------------------------------------------

NODE, NODE_KEY = "node-a", "sdk1-server-link-secret-3f8d"
TEXT = [V1TextPart(text="hello from synthorg")]


@pytest.fixture(scope="module")
def sdk1_server() -> Iterator[str]:
    with sdk1_peer(NODE, NODE_KEY) as server:
        yield server.url


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    conn = open_database(tmp_path)
    try:
        yield conn
    finally:
        conn.close()


def delegator(db: Database, tmp_path: Path, url: str, key: str = NODE_KEY) -> Delegator:
    catalog = SqliteCatalog(db, SecretBox.for_data_dir(tmp_path))
    catalog.put("sdk1", url, "api_key", key)
    return Delegator(catalog, SqliteDelegationStore(db), NODE, lambda: 10.0)


def test_we_call_the_1_x_server_in_1_0(db: Database, tmp_path: Path, sdk1_server: str) -> None:
    ours = delegator(db, tmp_path, sdk1_server)
    client = asyncio.run(ours.peer_client("sdk1"))
    assert client.speaks_v1 and client.rpc_url == sdk1_server + "/api/v1/a2a/"
    done = asyncio.run(ours.delegate("sdk1", TEXT, agent_id="echo"))
    assert done.state == "TASK_STATE_COMPLETED"
    assert done.task.artifacts and done.task.artifacts[0].parts[0] == TEXT[0]


def test_follow_and_cancel_a_parked_1_x_task(
    db: Database, tmp_path: Path, sdk1_server: str
) -> None:
    ours = delegator(db, tmp_path, sdk1_server)
    record = asyncio.run(ours.delegate("sdk1", TEXT, agent_id="parker"))
    assert record.state == "TASK_STATE_INPUT_REQUIRED"
    assert asyncio.run(ours.refresh(record.id)).state == "TASK_STATE_INPUT_REQUIRED"
    assert asyncio.run(ours.cancel(record.id)).state == "TASK_STATE_CANCELED"


def test_1_x_errors_surface_and_message_answers_complete(
    db: Database, tmp_path: Path, sdk1_server: str
) -> None:
    ours = delegator(db, tmp_path, sdk1_server)
    client = asyncio.run(ours.peer_client("sdk1"))
    with pytest.raises(PeerRpcError) as missing:
        asyncio.run(client.get_task("no-such-task"))
    assert missing.value.code == -32001
    # A {message} answer stands for a task completed with it, as a 0.3 Message answer does.
    answered = asyncio.run(ours.delegate("sdk1", TEXT, agent_id="chatty"))
    assert answered.state == "TASK_STATE_COMPLETED"
    assert answered.task.status.message is not None
    assert answered.task.status.message.parts == [V1TextPart(text="just a message")]
    wrong = delegator(db, tmp_path, sdk1_server, key="wrong")
    with pytest.raises(PeerRpcError) as refused:
        asyncio.run(wrong.delegate("sdk1", TEXT))
    assert refused.value.http_status == 401
