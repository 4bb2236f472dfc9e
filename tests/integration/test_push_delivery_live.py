"""Push delivery on a live node to real HTTP receivers on 127.0.0.1: the Task as body, the
token, Authorization and delivery id headers, retries keeping the delivery id, signed pushes
to a catalog peer's endpoint, and pushes owed across a restart of the sender."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from synthorg.push.delivery import CLAIM_LEASE
from synthorg.push.signing import signature
from tests.integration.helpers import Json, call, expect_result, message
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer
from tests.support.scripted_server import Answer, ScriptedServer

PEER, KEY = "peer-pushes", "key-pushes-3e9a1c7b5d2f"
DELIVERED = "a2a.push.delivered"


def config_yaml(allow_private: bool) -> str:
    return f"""\
a2a:
  enabled: true
  node_name: node-sender
  allowed_peers: [{PEER}]
  push_allow_private_networks: {str(allow_private).lower()}
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
"""


@pytest.fixture()
def receiver() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


def send_with_push(client: httpx.Client, push: Json) -> Json:
    params = {"message": message("hi", agent_id="echo"),
              "configuration": {"pushNotificationConfig": push}}
    return expect_result(call(client, "message/send", params))


def test_a_push_carries_the_task_token_authorization_and_delivery_id(
    tmp_path: Path, receiver: ScriptedServer
) -> None:
    add_peer(tmp_path, PEER, KEY)
    receiver.script.extend([Answer(200)])
    with LiveNode(tmp_path, config_yaml(True)) as node, node.client(PEER, KEY) as client:
        push = {"url": receiver.url + "/hook?x=1", "token": "tok-1",
                "authentication": {"schemes": ["Bearer"], "credentials": "cred-1"}}
        task = send_with_push(client, push)
        event = node.wait_for_event(DELIVERED, task_id=task["id"])
    [got] = receiver.received
    assert got.method == "POST" and got.path == "/hook?x=1"
    pushed = json.loads(got.body)
    assert pushed["kind"] == "task" and pushed["id"] == task["id"]
    assert pushed["status"]["state"] == "completed"
    assert got.headers["X-A2A-Notification-Token"] == "tok-1"
    assert got.headers["Authorization"] == "Bearer cred-1"
    assert got.headers["X-A2A-Delivery-Id"] == event["delivery_id"]
    assert "X-A2A-Signature" not in got.headers  # not a catalog peer's endpoint


def test_a_failed_push_is_retried_with_the_same_delivery_id(
    tmp_path: Path, receiver: ScriptedServer
) -> None:
    add_peer(tmp_path, PEER, KEY)
    receiver.script.extend([Answer(503), Answer(500), Answer(204)])
    with LiveNode(tmp_path, config_yaml(True)) as node, node.client(PEER, KEY) as client:
        task = send_with_push(client, {"url": receiver.url + "/hook"})
        event = node.wait_for_event(DELIVERED, task_id=task["id"])
        retries = node.events("a2a.push.retry_scheduled")
    assert event["attempt"] == 3 and len(retries) == 2
    ids = {r.headers["X-A2A-Delivery-Id"] for r in receiver.received}
    assert ids == {event["delivery_id"]} and len(receiver.received) == 3


def test_a_push_to_the_owners_own_receiver_is_signed_with_the_link_secret(
    tmp_path: Path, receiver: ScriptedServer
) -> None:
    add_peer(tmp_path, PEER, KEY, endpoint=receiver.url + "/base")
    receiver.script.extend([Answer(200)])
    # private networks stay refused: the owner's receiver is what allows the loopback target
    with LiveNode(tmp_path, config_yaml(False)) as node, node.client(PEER, KEY) as client:
        url = receiver.url + "/base/api/v1/webhooks/node-sender/a2a_push"
        credential = "registered-push-credential-3f1a"
        task = send_with_push(client, {"url": url, "authentication": {
            "schemes": ["Bearer"], "credentials": credential}})
        node.wait_for_event(DELIVERED, task_id=task["id"])
        assert not any(credential in line for line in node.lines)
    [got] = receiver.received
    timestamp, delivery = got.headers["X-A2A-Timestamp"], got.headers["X-A2A-Delivery-Id"]
    assert timestamp.isdigit()
    assert got.headers["X-A2A-Signature"] == signature(
        KEY, timestamp, delivery, "node-sender", got.body
    )
    assert got.headers["X-A2A-Peer-Name"] == "node-sender"
    # A2A's own form beside the signature (which stays, for replay protection)
    assert got.headers["Authorization"] == f"Bearer {credential}"


def test_a_1_0_config_pushes_with_its_scheme_and_credentials(
    tmp_path: Path, receiver: ScriptedServer
) -> None:
    add_peer(tmp_path, PEER, KEY)
    receiver.script.extend([Answer(200)])
    credential = "v1-push-credential-8e2b4d"
    with LiveNode(tmp_path, config_yaml(True)) as node, node.client(PEER, KEY) as client:
        msg = {"messageId": "m-v1-push", "role": "ROLE_USER", "parts": [{"text": "hi"}],
               "metadata": {"agentId": "echo"}}
        push = {"url": receiver.url + "/hook", "authentication": {
            "scheme": "Bearer", "credentials": credential}}
        response = client.post("/api/v1/a2a/", headers={"A2A-Version": "1.0"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": msg, "configuration": {"taskPushNotificationConfig": push}}})
        task = expect_result(response)["task"]
        node.wait_for_event(DELIVERED, task_id=task["id"])
        assert not any(credential in line for line in node.lines)
    [got] = receiver.received
    assert got.headers["Authorization"] == f"Bearer {credential}"


OTHER, OTHER_KEY = "peer-other", "key-other-7c1e9a3b5d2f"


@pytest.mark.parametrize("path", [
    "/api/v1/webhooks/node-sender/a2a_push",  # the other peer's receiver
    "/api/v1/a2a",  # any other path on its endpoint
])
def test_a_push_to_another_peers_endpoint_is_never_signed(
    tmp_path: Path, receiver: ScriptedServer, path: str
) -> None:
    # The caller owns the task; the url is another catalog peer's. The node must not sign
    # for that peer (a confused deputy), and it is a plain push to a private address.
    add_peer(tmp_path, PEER, KEY)
    add_peer(tmp_path, OTHER, OTHER_KEY, endpoint=receiver.url)
    with LiveNode(tmp_path, config_yaml(False)) as node, node.client(PEER, KEY) as client:
        params = {"message": message("hi", agent_id="echo"),
                  "configuration": {"pushNotificationConfig": {"url": receiver.url + path}}}
        refused = call(client, "message/send", params)
        assert refused.json()["error"]["code"] == -32602  # private networks are off
    receiver.script.extend([Answer(200)])
    with LiveNode(tmp_path, config_yaml(True)) as node, node.client(PEER, KEY) as client:
        task = send_with_push(client, {"url": receiver.url + path})
        node.wait_for_event(DELIVERED, task_id=task["id"])
    [got] = receiver.received
    assert "X-A2A-Signature" not in got.headers and "X-A2A-Timestamp" not in got.headers


def test_a_push_to_the_owners_endpoint_off_its_receiver_path_is_not_signed(
    tmp_path: Path, receiver: ScriptedServer
) -> None:
    add_peer(tmp_path, PEER, KEY, endpoint=receiver.url)
    receiver.script.extend([Answer(200)])
    with LiveNode(tmp_path, config_yaml(True)) as node, node.client(PEER, KEY) as client:
        task = send_with_push(client, {"url": receiver.url + "/api/v1/webhooks/x/a2a_push"})
        node.wait_for_event(DELIVERED, task_id=task["id"])
    [got] = receiver.received
    assert "X-A2A-Signature" not in got.headers


def test_a_push_owed_when_the_sender_stopped_is_sent_after_its_restart(
    tmp_path: Path, receiver: ScriptedServer
) -> None:
    add_peer(tmp_path, PEER, KEY)
    with LiveNode(tmp_path, config_yaml(True)) as node, node.client(PEER, KEY) as client:
        # the receiver answers 503 until the node is stopped: the delivery stays owed
        receiver.script.extend([Answer(503)] * 6)
        task = send_with_push(client, {"url": receiver.url + "/hook"})
        node.wait_for_event("a2a.push.retry_scheduled", task_id=task["id"])
    receiver.script.clear()
    receiver.script.append(Answer(200))
    with LiveNode(tmp_path, config_yaml(True)) as node:
        # due at once, or when the claim of a send cut short by the stop runs out
        event = node.wait_for_event(DELIVERED, timeout=CLAIM_LEASE * 2, task_id=task["id"])
    assert {r.headers["X-A2A-Delivery-Id"] for r in receiver.received} == {event["delivery_id"]}
