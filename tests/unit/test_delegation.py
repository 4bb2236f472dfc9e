"""Delegator: records, refresh, cancel and follow, against a scripted peer and a real node.

The scripted peer (a real HTTP server on loopback) answers from a queue; each answer echoes
the request's JSON-RPC id, as a real peer does. Follow's polling delays are shrunk to a few
milliseconds; nothing here sleeps to synchronise.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from synthorg.delegation.delegator import DelegationError, Delegator
from synthorg.delegation.errors import PeerMisconfigured, PeerRpcError
from synthorg.dialects.objects import state_v03, task_v1
from synthorg.generated.models import Task, V1TextPart
from synthorg.store.delegations import Delegation
from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import Database, open_database
from synthorg.store.sqlite.delegations import SqliteDelegationStore
from tests.support.catalog import add_peer
from tests.support.node import NodeProcess
from tests.support.scripted_server import Answer, ScriptedServer

SECRET = "delegation-link-secret-5c1e"
TEXT = [V1TextPart(text="hello")]
FAST = {"first_delay": 0.005, "max_delay": 0.02}


def task(state: str, task_id: str = "remote-1", **extra: Any) -> dict[str, Any]:
    return {
        "kind": "task",
        "id": task_id,
        "contextId": "ctx-1",
        "status": {"state": state},
        **extra,
    }


def result(state: str, **extra: Any) -> Answer:
    return Answer(body={"jsonrpc": "2.0", "result": task(state, **extra)}, echo_id=True)


def rpc_error(code: int, message: str, status: int = 200) -> Answer:
    error = {"code": code, "message": message}
    return Answer(status, {"jsonrpc": "2.0", "id": None, "error": error})


class Local:
    """A node's side of delegation: its database, catalog and delegation records."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.db: Database = open_database(data_dir)
        self.catalog = SqliteCatalog(self.db, SecretBox.for_data_dir(data_dir))
        self.store = SqliteDelegationStore(self.db)

    def delegator(self, node_name: str | None = "node-a") -> Delegator:
        return Delegator(self.catalog, self.store, node_name, lambda: 5.0)

    def link(self, url: str, peer: str = "node-b") -> None:
        self.catalog.put(peer, url, "api_key", SECRET)


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Local]:
    side = Local(tmp_path / "node-a")
    try:
        yield side
    finally:
        side.db.close()


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:  # one per module: its shutdown takes a poll interval
        yield server


@pytest.fixture
def peer(local: Local, scripted: ScriptedServer) -> ScriptedServer:
    scripted.script.clear()
    scripted.received.clear()
    local.link(scripted.url)
    return scripted


def sent(server: ScriptedServer, index: int) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(server.received[index].body)
    return body


def started(local: Local, peer: ScriptedServer, state: str = "working") -> Delegation:
    peer.script.append(result(state))
    return asyncio.run(local.delegator().delegate("node-b", TEXT, agent_id="echo"))


# -- records ---------------------------------------------------------------------------


def test_delegate_records_the_remote_task(local: Local, peer: ScriptedServer) -> None:
    peer.script.append(result("working"))
    record = asyncio.run(local.delegator().delegate(
        "node-b", TEXT, agent_id="echo", metadata={"k": "v"}, origin_task_id="in-1"
    ))
    assert (record.peer, record.remote_task_id) == ("node-b", "remote-1")
    assert record.context_id == "ctx-1"
    assert record.state == "TASK_STATE_WORKING" and record.origin_task_id == "in-1"
    assert record.task == task_v1(Task.model_validate(task("working")))
    assert asyncio.run(local.store.get(record.id)) == record
    assert asyncio.run(local.store.by_origin("in-1")) == record
    request = sent(peer, 0)
    message = request["params"]["message"]
    assert request["method"] == "message/send"
    assert message["messageId"] == record.message_id
    assert message["metadata"] == {"k": "v", "agentId": "echo"}
    assert peer.received[0].headers["X-A2A-Peer-Name"] == "node-a"
    assert peer.received[0].headers["X-API-Key"] == SECRET


def test_a_refused_delegation_records_nothing(local: Local, peer: ScriptedServer) -> None:
    peer.script.append(rpc_error(-32004, "Peer not allowed", 403))
    with pytest.raises(PeerRpcError) as caught:
        asyncio.run(local.delegator().delegate("node-b", TEXT))
    assert caught.value.code == -32004
    assert asyncio.run(local.store.recent()) == []


def test_refresh_and_cancel_update_the_record(local: Local, peer: ScriptedServer) -> None:
    record = started(local, peer, "input-required")
    peer.script.append(result("input-required", artifacts=[
        {"artifactId": "a1", "parts": [{"kind": "text", "text": "partial"}]}
    ]))
    refreshed = asyncio.run(local.delegator().refresh(record.id))
    assert refreshed.task.artifacts and refreshed.task.artifacts[0].artifactId == "a1"
    assert refreshed.created_at == record.created_at
    peer.script.append(result("canceled"))
    canceled = asyncio.run(local.delegator().cancel(record.id))
    assert canceled.state == "TASK_STATE_CANCELED"
    assert asyncio.run(local.store.get(record.id)) == canceled
    assert [sent(peer, i)["method"] for i in range(3)] == [
        "message/send", "tasks/get", "tasks/cancel",
    ]
    assert sent(peer, 2)["params"] == {"id": "remote-1"}


def test_records_are_visible_to_another_connection(local: Local, peer: ScriptedServer) -> None:
    """The CLI and the node are separate processes on one database."""
    record = started(local, peer)
    peer.script.append(result("completed"))
    asyncio.run(local.delegator().refresh(record.id))
    other = open_database(local.data_dir)
    try:
        seen = asyncio.run(SqliteDelegationStore(other).get(record.id))
    finally:
        other.close()
    assert seen is not None and seen.state == "TASK_STATE_COMPLETED"


def test_setup_errors_are_delegation_errors(local: Local, peer: ScriptedServer) -> None:
    with pytest.raises(DelegationError, match=r"a2a\.node_name is not set"):
        asyncio.run(local.delegator(node_name=None).delegate("node-b", TEXT))
    with pytest.raises(DelegationError, match="no catalog record for peer 'node-z'"):
        asyncio.run(local.delegator().delegate("node-z", TEXT))
    with pytest.raises(DelegationError, match="no outbound task 'nope'"):
        asyncio.run(local.delegator().refresh("nope"))
    assert peer.received == []


# -- follow ----------------------------------------------------------------------------


def follow(
    local: Local, record: Delegation, timeout: float = 10.0
) -> tuple[Delegation, list[str]]:
    seen: list[str] = []
    final = asyncio.run(local.delegator().follow(
        record.id, timeout, lambda r: seen.append(state_v03(r.state)), **FAST
    ))
    return final, seen


def test_follow_reports_changes_and_stops_at_input_required(
    local: Local, peer: ScriptedServer
) -> None:
    record = started(local, peer, "submitted")
    peer.script.extend([result("working"), result("working"), result("input-required")])
    final, seen = follow(local, record)
    assert final.state == "TASK_STATE_INPUT_REQUIRED"
    assert seen == ["submitted", "working", "input-required"]
    assert len(peer.received) == 4  # no poll after the task settled
    assert asyncio.run(local.store.get(record.id)) == final


@pytest.mark.parametrize("state", ["completed", "failed", "canceled", "rejected"])
def test_follow_stops_at_a_final_state(local: Local, peer: ScriptedServer, state: str) -> None:
    record = started(local, peer)
    peer.script.extend([result("working"), result(state)])
    final, seen = follow(local, record)
    assert state_v03(final.state) == state and seen == ["working", state]
    assert len(peer.received) == 3


def test_follow_of_a_settled_task_asks_nothing(local: Local, peer: ScriptedServer) -> None:
    record = started(local, peer, "completed")
    final, seen = follow(local, record)
    assert final == record and seen == ["completed"]
    assert len(peer.received) == 1


def test_follow_times_out_cleanly(local: Local, peer: ScriptedServer) -> None:
    record = started(local, peer)
    peer.script.extend(result("working") for _ in range(500))
    with pytest.raises(DelegationError, match=r"still working after 0\.2s; it goes on at the peer"):
        follow(local, record, timeout=0.2)
    kept = asyncio.run(local.store.get(record.id))
    assert kept is not None and kept.state == "TASK_STATE_WORKING"


def test_a_peer_error_while_following_is_tolerated(local: Local, peer: ScriptedServer) -> None:
    record = started(local, peer)
    peer.script.extend([
        rpc_error(-32603, "Internal error", 500),
        Answer(500, b"<html>down</html>"),
        result("completed"),
    ])
    troubles: list[str] = []
    final = asyncio.run(local.delegator().follow(
        record.id, 10.0, lambda r: troubles.append(state_v03(r.state)),
        on_trouble=lambda: troubles.append("trouble"), **FAST,
    ))
    assert final.state == "TASK_STATE_COMPLETED"
    # Each failed poll is reported as trouble, apart from the updates, then the change.
    assert troubles == ["working", "trouble", "trouble", "completed"]


def test_follow_reports_every_change_of_the_task_not_only_of_its_state(
    local: Local, peer: ScriptedServer
) -> None:
    record = started(local, peer)
    said = {"status": {"state": "working", "message": {
        "kind": "message", "messageId": "m1", "role": "agent",
        "parts": [{"kind": "text", "text": "halfway"}]}}}
    peer.script.extend([result("working"), result("working", **said), result("working", **said),
                        result("completed")])
    final, seen = follow(local, record)
    assert final.state == "TASK_STATE_COMPLETED"
    assert seen == ["working", "working", "completed"]  # the message, once; then the end


def test_a_peer_failing_until_the_deadline_ends_the_follow(
    local: Local, peer: ScriptedServer
) -> None:
    record = started(local, peer)
    peer.script.extend(rpc_error(-32603, "Internal error", 500) for _ in range(500))
    with pytest.raises(DelegationError):
        follow(local, record, timeout=0.2)
    kept = asyncio.run(local.store.get(record.id))
    assert kept is not None and kept.state == "TASK_STATE_WORKING" and kept.task == record.task


def test_an_unreachable_peer_while_following_is_tolerated_until_the_deadline(
    local: Local,
) -> None:
    with ScriptedServer() as peer:
        local.link(peer.url)
        record = started(local, peer)
    # The peer went away: connections are refused from now on.
    seen: list[str] = []
    # The client retries the refused connection a few times; the follow then gives up at
    # its deadline, with the peer's error or the still-unfinished state.
    with pytest.raises(DelegationError, match=r"cannot connect|still working"):
        asyncio.run(local.delegator().follow(
            record.id, 0.05, lambda r: seen.append(state_v03(r.state)),
            on_trouble=lambda: seen.append("trouble")))
    assert seen[0] == "working" and set(seen[1:]) == {"trouble"} and len(seen) >= 2
    kept = asyncio.run(local.store.get(record.id))
    assert kept is not None and kept.state == "TASK_STATE_WORKING"


# -- against a real node ---------------------------------------------------------------

NODE_CONFIG = """\
a2a:
  enabled: true
  allowed_peers: [node-a]
agents:
  - {id: echo, name: Echo, executor: {kind: echo}}
  - {id: parker, name: Parker, executor: {kind: park}}
"""


@pytest.fixture(scope="module")
def node_b(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    data_dir = tmp_path_factory.mktemp("node-b")
    add_peer(data_dir, "node-a", SECRET)
    with NodeProcess(data_dir, NODE_CONFIG) as node:
        yield node


def test_against_a_real_node_echo_completes_with_its_artifact(
    local: Local, node_b: NodeProcess
) -> None:
    local.link(node_b.url)
    delegator = local.delegator()
    record = asyncio.run(delegator.delegate("node-b", TEXT, agent_id="echo"))
    assert record.state == "TASK_STATE_COMPLETED"
    assert record.task.artifacts
    assert [p.text for p in record.task.artifacts[0].parts] == ["hello"]  # type: ignore[union-attr]
    final = asyncio.run(delegator.follow(record.id, 5.0))
    assert final == record  # already final: nothing to poll


def test_against_a_real_node_parked_then_canceled(local: Local, node_b: NodeProcess) -> None:
    local.link(node_b.url)
    delegator = local.delegator()
    record = asyncio.run(delegator.delegate("node-b", TEXT, agent_id="parker"))
    assert asyncio.run(delegator.follow(record.id, 5.0)).state == "TASK_STATE_INPUT_REQUIRED"
    assert asyncio.run(delegator.refresh(record.id)).state == "TASK_STATE_INPUT_REQUIRED"
    canceled = asyncio.run(delegator.cancel(record.id))
    assert canceled.state == "TASK_STATE_CANCELED"
    assert [r.id for r in asyncio.run(local.store.recent())] == [record.id]
    with pytest.raises(PeerRpcError) as caught:  # final at the peer now
        asyncio.run(delegator.cancel(record.id))
    assert caught.value.code == -32002


def test_an_mtls_peer_is_never_called_over_grpc_and_the_refusal_is_not_retried(
    local: Local, peer: ScriptedServer,
) -> None:
    # A delegation sent over gRPC whose peer was since re-linked by certificate (mtls).
    sent_over_grpc = dataclasses.replace(started(local, peer), id="over-grpc", binding="GRPC")
    asyncio.run(local.store.add(sent_over_grpc))
    https = peer.url.replace("http://", "https://")  # an mtls endpoint is https
    local.catalog.put("node-b", https, "mtls", "sha256//" + "A" * 43 + "=")
    calls = len(peer.received)
    troubles: list[str] = []
    with pytest.raises(DelegationError, match="authenticates by client certificate"):
        asyncio.run(local.delegator().follow(
            sent_over_grpc.id, 10.0, on_trouble=lambda: troubles.append("trouble"), **FAST))
    assert troubles == []  # refused at once: no poll failed and was tried again
    with pytest.raises(PeerMisconfigured, match="scheme mtls"):
        asyncio.run(local.delegator().refresh(sent_over_grpc.id))
    assert len(peer.received) == calls  # nothing sent, not even a card fetch
