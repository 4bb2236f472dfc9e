"""Live federation between three real nodes, driven through the CLI (see conftest.py)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from synthorg.delegation.client import A2AClient
from synthorg.delegation.errors import PeerRpcError
from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import open_database
from tests.federation.conftest import Federation
from tests.federation.harness import FedNode, artifact_texts, delegate, status_text

EXIT_PEER, EXIT_UNSUCCESSFUL = 3, 4


def outbound(node: FedNode, local_id: str, *extra: str) -> dict[str, Any]:
    record: dict[str, Any] = node.cli_json("tasks", "get", local_id, *extra)
    return record


def inbound(node: FedNode, task_id: str) -> dict[str, Any]:
    found: dict[str, Any] = node.cli_json("tasks", "get", task_id)
    return found


def forwarded(node: FedNode, origin_task_id: str) -> dict[str, Any]:
    """The node's outbound record that forwards its inbound task `origin_task_id`."""
    records: list[dict[str, Any]] = node.cli_json("tasks", "list", "--outbound")["outbound"]
    matches = [r for r in records if r["origin_task_id"] == origin_task_id]
    assert len(matches) == 1, records
    return matches[0]


def client_of(node: FedNode, peer: str) -> A2AClient:
    """`node`'s own outbound client for `peer`, from its catalog (what its CLI would use)."""
    db = open_database(node.data_dir)
    try:
        record = SqliteCatalog(db, SecretBox.for_data_dir(node.data_dir)).get(peer)
    finally:
        db.close()
    assert record is not None
    return A2AClient(record, node.name, lambda: 10.0)


# -- A -> B ------------------------------------------------------------------------------


def test_a_delegates_to_b_echo_and_gets_the_completed_task(fed: Federation) -> None:
    # What an operator reads (ids, state, the artifact's text), then the same as JSON.
    shown = fed.a.cli("delegate", "node-b", "readable result", "--agent", "echo", "--wait")
    assert shown.returncode == 0, shown.stderr
    assert "local id" in shown.stdout and "remote task" in shown.stdout
    assert "state        completed" in shown.stdout
    assert "artifact echo:\n  readable result" in shown.stdout
    code, record = delegate(fed.a, "node-b", "hello federation", "--agent", "echo", "--wait")
    assert code == 0
    assert record["peer"] == "node-b" and record["state"] == "completed"
    assert artifact_texts(record["task"]) == ["hello federation"]
    # node-b holds the same task, owned by node-a, with the same artifact.
    seen = inbound(fed.b, record["remote_task_id"])
    assert seen["peer"] == "node-a"
    assert seen["task"]["status"]["state"] == "completed"
    assert seen["task"]["artifacts"] == record["task"]["artifacts"]
    # Refreshing asks the peer again and finds the same final task.
    assert outbound(fed.a, record["id"], "--refresh")["task"]["artifacts"] == (
        record["task"]["artifacts"]
    )


def test_a_cancels_a_parked_task_on_b(fed: Federation) -> None:
    code, record = delegate(fed.a, "node-b", "park me", "--agent", "parker", "--wait")
    assert code == 0 and record["state"] == "input-required"
    result = fed.a.cli("tasks", "cancel", record["id"], "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["state"] == "canceled"
    assert inbound(fed.b, record["remote_task_id"])["task"]["status"]["state"] == "canceled"
    # A final task is not cancelable: the peer's -32002, one line, exit 4.
    again = fed.a.cli("tasks", "cancel", record["id"])
    assert again.returncode == EXIT_UNSUCCESSFUL
    assert again.stderr.startswith("error: peer node-b refused: -32002")
    assert again.stderr.count("\n") == 1


def test_b_operator_cancels_an_inbound_task_locally(fed: Federation) -> None:
    _, record = delegate(fed.a, "node-b", "cancel me at home", "--agent", "parker", "--wait")
    result = fed.b.cli("tasks", "cancel", record["remote_task_id"], "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["task"]["status"]["state"] == "canceled"
    # The running node serves the new state to the task's owner at once.
    assert outbound(fed.a, record["id"], "--refresh")["state"] == "canceled"
    # The state machine holds locally too: a final task cannot be canceled.
    again = fed.b.cli("tasks", "cancel", record["remote_task_id"])
    assert again.returncode == EXIT_UNSUCCESSFUL
    assert "already canceled" in again.stderr


def test_c_can_neither_read_nor_cancel_a_task_of_a_on_b(fed: Federation) -> None:
    _, record = delegate(fed.a, "node-b", "mine only", "--agent", "parker", "--wait")
    remote_id = record["remote_task_id"]
    c_client = client_of(fed.c, "node-b")
    for call in (c_client.get_task(remote_id), c_client.cancel_task(remote_id)):
        with pytest.raises(PeerRpcError) as caught:
            asyncio.run(call)
        assert caught.value.code == -32001 and caught.value.http_status == 200
    # node-a still sees its task untouched, and can still cancel it.
    assert outbound(fed.a, record["id"], "--refresh")["state"] == "input-required"
    assert fed.a.cli("tasks", "cancel", record["id"]).returncode == 0


def test_a_wrong_link_secret_is_a_clear_401(fed: Federation) -> None:
    wrong = "not-the-link-secret-" + "x" * 16
    fed.a.add_peer("node-b", fed.b.url, wrong)
    try:
        result = fed.a.cli("delegate", "node-b", "hello", "--agent", "echo")
    finally:
        fed.a.add_peer("node-b", fed.b.url, fed.ab_secret)
    assert result.returncode == EXIT_PEER
    assert result.stderr.startswith("error: peer node-b refused: -32003 ")
    assert result.stderr.rstrip().endswith("(HTTP 401)")
    assert result.stderr.count("\n") == 1 and result.stdout == ""
    assert wrong not in result.stderr and fed.ab_secret not in result.stderr


def test_an_unlisted_peer_is_a_clear_403(fed: Federation) -> None:
    result = fed.a.cli("delegate", "node-c", "hello", "--agent", "echo")
    assert result.returncode == EXIT_PEER
    assert result.stderr.startswith("error: peer node-c refused: -32004 ")
    assert result.stderr.rstrip().endswith("(HTTP 403)")
    assert result.stderr.count("\n") == 1


# -- A -> B -> C --------------------------------------------------------------------------


def test_onward_delegation_completes_with_c_artifact(fed: Federation) -> None:
    code, record = delegate(fed.a, "node-b", "through two hops", "--agent", "relay", "--wait")
    assert code == 0, record
    assert record["state"] == "completed"
    assert artifact_texts(record["task"]) == ["through two hops"]
    hop = forwarded(fed.b, record["remote_task_id"])
    assert hop["peer"] == "node-c" and hop["state"] == "completed"
    at_c = inbound(fed.c, hop["remote_task_id"])
    assert at_c["peer"] == "node-b" and at_c["task"]["status"]["state"] == "completed"
    assert at_c["task"]["artifacts"] == record["task"]["artifacts"]  # C's artifact, relayed
    # The hop metadata records the path the task took.
    assert at_c["task"]["history"][0]["metadata"]["synthorg.visited"] == ["node-a", "node-b"]


def test_a_cancel_propagates_downstream_to_c(fed: Federation) -> None:
    code, record = delegate(fed.a, "node-b", "park at c", "--agent", "relay-park", "--wait")
    assert code == 0 and record["state"] == "input-required", record
    hop = forwarded(fed.b, record["remote_task_id"])
    assert inbound(fed.c, hop["remote_task_id"])["task"]["status"]["state"] == "input-required"
    result = fed.a.cli("tasks", "cancel", record["id"])
    assert result.returncode == 0, result.stderr
    assert inbound(fed.b, record["remote_task_id"])["task"]["status"]["state"] == "canceled"
    assert outbound(fed.b, hop["id"])["state"] == "canceled"
    assert inbound(fed.c, hop["remote_task_id"])["task"]["status"]["state"] == "canceled"


# -- loops ---------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", ["bounce", "back"])
def test_a_loop_back_to_a_ends_in_a_failed_task_naming_the_loop(
    fed: Federation, agent: str
) -> None:
    """A -> B -> A: A refuses the hop back (-32030); B's task fails, saying why."""
    code, record = delegate(fed.a, "node-b", "round and round", "--agent", agent, "--wait")
    assert code == EXIT_UNSUCCESSFUL
    assert record["state"] == "failed"
    text = status_text(record["task"])
    assert "peer node-a refused" in text and "Delegation loop" in text, text
    assert "node-a -> node-b" in text, text


def test_a_loop_not_through_the_origin_is_stopped_at_the_revisited_node(
    fed: Federation,
) -> None:
    """C -> B -> A -> B: B refuses the second visit; the failure travels back to C."""
    code, record = delegate(fed.c, "node-b", "loop", "--agent", "bounce", "--wait")
    assert code == EXIT_UNSUCCESSFUL
    text = status_text(record["task"])
    assert "Delegation loop" in text and "node-c -> node-b -> node-a" in text, text


# -- listing -----------------------------------------------------------------------------


def test_tasks_list_shows_both_directions(fed: Federation) -> None:
    _, record = delegate(fed.a, "node-b", "listed", "--agent", "echo")
    on_a = fed.a.cli_json("tasks", "list", "--outbound")
    assert record["id"] in {r["id"] for r in on_a["outbound"]} and "inbound" not in on_a
    on_b = fed.b.cli_json("tasks", "list", "--inbound")
    mine = [t for t in on_b["inbound"] if t["task"]["id"] == record["remote_task_id"]]
    assert mine and mine[0]["peer"] == "node-a"
    table = fed.b.cli("tasks", "list")
    assert table.returncode == 0
    assert "outbound (delegated by this node to peers)" in table.stdout
    assert record["remote_task_id"] in table.stdout
