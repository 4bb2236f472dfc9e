"""The signed push receiver, `POST /api/v1/webhooks/{peer}/a2a_push`, on live nodes: forged,
stale, replayed and unknown-peer pushes refused (401/409, each reason an event), a verified
one accepted; a captured push sent again under a new delivery id or to another path refused;
a delegation record that no push moves back; one node pushing to another's receiver,
signed with their link secret; and A2A's own form (Authorization or X-A2A-Notification-Token
carrying the credential registered for the delegation) accepted, a wrong one refused."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from synthorg.dialects.objects import task_v1
from synthorg.generated.models import Task
from synthorg.push.signing import push_credential, signature
from synthorg.store.delegations import Delegation
from synthorg.store.sqlite.backend import SqliteStores
from tests.integration.helpers import call, expect_result, message
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer
from tests.support.node import cli

SENDER, LINK = "node-sender", "link-secret-5a9c3e7b1d2f"
RECEIVED, REJECTED = "a2a.push.received", "a2a.push.rejected"

RECEIVER_CONFIG = f"""\
a2a:
  enabled: true
  node_name: node-receiver
  allowed_peers: [{SENDER}]
"""

TASK = {"kind": "task", "id": "t-remote", "contextId": "c-1",
        "status": {"state": "completed"}}


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir: Path = tmp_path_factory.mktemp("push-receiver")
    add_peer(data_dir, SENDER, LINK)
    with LiveNode(data_dir, RECEIVER_CONFIG) as live:
        yield live


def push(node: LiveNode, peer: str = SENDER, *, secret: str = LINK, body: bytes | None = None,
         timestamp: int | None = None, delivery_id: str | None = None,
         signed: bool = True) -> tuple[httpx.Response, str]:
    raw = body if body is not None else json.dumps(TASK).encode()
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    delivery = delivery_id or uuid.uuid4().hex
    headers = {"Content-Type": "application/json", "X-A2A-Delivery-Id": delivery,
               "X-A2A-Timestamp": stamp}
    if signed:
        headers["X-A2A-Signature"] = signature(secret, stamp, delivery, peer, raw)
    response = httpx.post(f"{node.url}/api/v1/webhooks/{peer}/a2a_push", content=raw,
                          headers=headers, timeout=10)
    return response, delivery


def test_a_verified_push_is_accepted_once_and_its_replay_refused(receiver: LiveNode) -> None:
    response, delivery = push(receiver)
    assert response.status_code == 204, response.text
    event = receiver.wait_for_event(RECEIVED, delivery_id=delivery)
    assert event["task_id"] == "t-remote" and event["state"] == "completed"
    again, _ = push(receiver, delivery_id=delivery)
    assert again.status_code == 409 and again.json()["error"] == "replayed"
    receiver.wait_for_event(REJECTED, delivery_id=delivery, reason="replayed")


@pytest.mark.parametrize("kwargs,reason", [
    ({"peer": "node-stranger"}, "unknown_peer"),
    ({"secret": "not-the-link-secret"}, "bad_signature"),
    ({"signed": False}, "missing_signature"),
    ({"timestamp": int(time.time()) - 3600}, "stale_timestamp"),
])
def test_an_unverifiable_push_is_refused_with_401(
    receiver: LiveNode, kwargs: dict[str, object], reason: str
) -> None:
    before = len(receiver.events(REJECTED))
    response, delivery = push(receiver, **kwargs)  # type: ignore[arg-type]
    assert response.status_code == 401 and response.json()["error"] == "unauthorized"
    receiver.wait_for_events(REJECTED, before + 1)
    assert receiver.events(REJECTED)[-1]["reason"] == reason
    assert receiver.find_event(RECEIVED, delivery_id=delivery) is None


def test_a_body_changed_after_signing_is_refused(receiver: LiveNode) -> None:
    stamp = str(int(time.time()))
    raw = json.dumps(TASK).encode()
    delivery = uuid.uuid4().hex
    headers = {"X-A2A-Delivery-Id": delivery, "X-A2A-Timestamp": stamp,
               "X-A2A-Signature": signature(LINK, stamp, delivery, SENDER, raw)}
    forged = raw.replace(b"completed", b"failed\x20\x20\x20")
    response = httpx.post(f"{receiver.url}/api/v1/webhooks/{SENDER}/a2a_push", content=forged,
                          headers=headers, timeout=10)
    assert response.status_code == 401


def post_raw(node: LiveNode, peer: str, raw: bytes, headers: dict[str, bytes | str]
             ) -> httpx.Response:
    return httpx.post(f"{node.url}/api/v1/webhooks/{peer}/a2a_push", content=raw,
                      headers=headers, timeout=10)


def test_a_captured_push_under_a_new_delivery_id_is_refused(receiver: LiveNode) -> None:
    stamp, raw, delivery = str(int(time.time())), json.dumps(TASK).encode(), uuid.uuid4().hex
    headers = {"X-A2A-Delivery-Id": delivery, "X-A2A-Timestamp": stamp,
               "X-A2A-Signature": signature(LINK, stamp, delivery, SENDER, raw)}
    assert post_raw(receiver, SENDER, raw, headers).status_code == 204
    another = uuid.uuid4().hex
    response = post_raw(receiver, SENDER, raw, {**headers, "X-A2A-Delivery-Id": another})
    assert response.status_code == 401
    receiver.wait_for_event(REJECTED, delivery_id=another, reason="bad_signature")


def test_a_push_signed_for_another_receiver_path_is_refused(tmp_path: Path) -> None:
    # The link secret is shared both ways: a push this node's peer signed for this node's
    # own receiver path (as if it came from here) must not verify as one from the peer.
    add_peer(tmp_path, SENDER, LINK)
    with LiveNode(tmp_path, RECEIVER_CONFIG) as node:
        stamp, raw, delivery = str(int(time.time())), json.dumps(TASK).encode(), uuid.uuid4().hex
        headers = {"X-A2A-Delivery-Id": delivery, "X-A2A-Timestamp": stamp,
                   "X-A2A-Signature": signature(LINK, stamp, delivery, "node-receiver", raw)}
        assert post_raw(node, SENDER, raw, headers).status_code == 401
        node.wait_for_event(REJECTED, delivery_id=delivery, reason="bad_signature")


@pytest.mark.parametrize("stamp", [b"\xb2", "\u00b2".encode(), "\u0661".encode(), b"9" * 5000,
                                   b"+1", b"1_0"])
def test_a_timestamp_that_is_not_ascii_digits_is_refused_before_the_signature(
    receiver: LiveNode, stamp: bytes
) -> None:
    raw = json.dumps(TASK).encode()
    before = len(receiver.events(REJECTED))
    headers: dict[str, bytes | str] = {
        "X-A2A-Delivery-Id": uuid.uuid4().hex, "X-A2A-Timestamp": stamp,
        "X-A2A-Signature": "0" * 64,
    }
    response = post_raw(receiver, SENDER, raw, headers)
    assert response.status_code == 401 and response.json()["error"] == "unauthorized"
    receiver.wait_for_events(REJECTED, before + 1)
    assert receiver.events(REJECTED)[-1]["reason"] == "bad_timestamp"


def _at(state: str, second: int) -> bytes:
    return json.dumps({"kind": "task", "id": "t-followed", "contextId": "c-1", "status": {
        "state": state, "timestamp": f"2030-01-01T00:00:{second:02d}.000Z"}}).encode()


def test_no_push_moves_a_delegation_back_from_final_or_back_in_time(tmp_path: Path) -> None:
    add_peer(tmp_path, SENDER, LINK)
    stores = SqliteStores(tmp_path)
    stamp = "2030-01-01T00:00:00.000Z"
    try:
        asyncio.run(stores.delegations.add(Delegation(
            "d-followed", SENDER, "t-followed", "c-1", "m-1", "TASK_STATE_SUBMITTED", None,
            task_v1(Task.model_validate_json(_at("submitted", 1))), stamp, stamp)))
    finally:
        stores.close()
    with LiveNode(tmp_path, RECEIVER_CONFIG) as node:
        def state_after(body: bytes) -> str:
            response, delivery = push(node, body=body)
            assert response.status_code == 204, response.text
            event = node.wait_for_event(RECEIVED, delivery_id=delivery)
            assert event["delegation_id"] == "d-followed"
            return str(event["delegation_state"])

        assert state_after(_at("working", 5)) == "working"
        assert state_after(_at("submitted", 3)) == "working"  # a late retry: older, not taken
        assert state_after(_at("completed", 9)) == "completed"
        # a genuine earlier push sent again (fresh delivery id, fresh signature) changes nothing
        assert state_after(_at("working", 5)) == "completed"
        assert state_after(_at("working", 20)) == "completed"


def delegated(data_dir: Path, remote_task_id: str) -> None:
    """A delegation of `remote_task_id` to SENDER, as this node records one it follows."""
    stamp = "2030-01-01T00:00:00.000Z"
    stores = SqliteStores(data_dir)
    try:
        asyncio.run(stores.delegations.add(Delegation(
            f"d-{remote_task_id}", SENDER, remote_task_id, "c-1", "m-1", "TASK_STATE_SUBMITTED",
            None, task_v1(Task.model_validate({
                "kind": "task", "id": remote_task_id, "contextId": "c-1",
                "status": {"state": "submitted", "timestamp": stamp}})),
            stamp, stamp)))
    finally:
        stores.close()


def _task(task_id: str, state: str, second: int) -> bytes:
    return json.dumps({"kind": "task", "id": task_id, "contextId": "c-1", "status": {
        "state": state, "timestamp": f"2030-01-01T00:00:{second:02d}.000Z"}}).encode()


def test_a2as_own_form_is_accepted_with_the_registered_credential_only(tmp_path: Path) -> None:
    add_peer(tmp_path, SENDER, LINK)
    delegated(tmp_path, "t-spec")
    delegated(tmp_path, "t-other")
    good = push_credential(LINK, SENDER, "t-spec")
    other = push_credential(LINK, SENDER, "t-other")  # another delegation's credential
    with LiveNode(tmp_path, RECEIVER_CONFIG) as node:
        def send(body: bytes, **headers: str) -> httpx.Response:
            return post_raw(node, SENDER, body, {"Content-Type": "application/json", **headers})

        # The spec's form: Authorization: Bearer <credential> alone (no signature, no id).
        working = send(_task("t-spec", "working", 5), Authorization=f"Bearer {good}")
        assert working.status_code == 204, working.text
        event = node.wait_for_event(RECEIVED, task_id="t-spec", state="working")
        assert event["delegation_id"] == "d-t-spec" and event["delegation_state"] == "working"
        # 0.3's token header; the scheme in any case; both at once.
        assert send(_task("t-spec", "working", 6),
                    **{"X-A2A-Notification-Token": good}).status_code == 204
        assert send(_task("t-spec", "working", 7), Authorization=f"bearer {good}").status_code \
            == 204
        delivery = uuid.uuid4().hex
        both = {"Authorization": f"Bearer {good}", "X-A2A-Notification-Token": good,
                "X-A2A-Delivery-Id": delivery}
        assert send(_task("t-spec", "completed", 9), **both).status_code == 204
        node.wait_for_event(RECEIVED, delivery_id=delivery, delegation_state="completed")
        again = send(_task("t-spec", "completed", 9), **both)  # a delivery id, when sent, counts
        assert again.status_code == 409
        node.wait_for_event(REJECTED, delivery_id=delivery, reason="replayed")  # counted below
        before = len(node.events(REJECTED))
        refused = [
            {"Authorization": f"Bearer {other}"},  # another task's credential
            {"Authorization": f"Bearer {good[:-1]}x"},
            {"Authorization": f"Basic {good}"},
            {"Authorization": good},  # no scheme
            {"Authorization": f"Bearer {good}", "X-A2A-Notification-Token": other},  # each
            {"X-A2A-Notification-Token": f"{good}x"},
        ]
        for headers in refused:
            response = send(_task("t-spec", "failed", 30), **headers)
            assert response.status_code == 401, headers
            assert response.json() == {"error": "unauthorized",
                                       "message": "The push cannot be verified"}
        # a task this node delegated to no one has no credential, whatever is presented
        unknown = send(_task("t-nobody", "failed", 30),
                       Authorization=f"Bearer {push_credential(LINK, SENDER, 't-nobody')}")
        assert unknown.status_code == 401
        rejected = node.wait_for_events(REJECTED, before + len(refused) + 1)[before:]
        assert {e["reason"] for e in rejected} == {"bad_authorization"}
        assert all(good not in json.dumps(e) for e in node.events(REJECTED))
        # nothing refused moved the record: it stays completed
        assert node.find_event(RECEIVED, task_id="t-spec", state="failed") is None


def test_one_node_pushes_to_anothers_receiver_signed(tmp_path: Path) -> None:
    receiver_dir, sender_dir = tmp_path / "receiver", tmp_path / "sender"
    add_peer(receiver_dir, SENDER, LINK)
    with LiveNode(receiver_dir, RECEIVER_CONFIG) as receiver:
        # the receiving node owns the task on the sender (it calls in with their link secret)
        add_peer(sender_dir, "node-receiver", LINK, endpoint=receiver.url)
        sender_config = f"""\
a2a:
  enabled: true
  node_name: {SENDER}
  allowed_peers: [node-receiver]
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
"""
        with LiveNode(sender_dir, sender_config) as sender, \
                sender.client("node-receiver", LINK) as client:
            url = f"{receiver.url}/api/v1/webhooks/{SENDER}/a2a_push"
            params = {"message": message("hi", agent_id="echo"),
                      "configuration": {"pushNotificationConfig": {"url": url}}}
            task = expect_result(call(client, "message/send", params))
            event = receiver.wait_for_event(RECEIVED, task_id=task["id"])
            sender.wait_for_event("a2a.push.delivered", delivery_id=event["delivery_id"])
    assert event["state"] == "completed" and event["peer_name"] == SENDER


def test_a_skew_of_zero_turns_the_freshness_check_off(tmp_path: Path) -> None:
    add_peer(tmp_path, SENDER, LINK)
    cli(tmp_path, "settings", "set", "a2a.push_verification_clock_skew_seconds", "0")
    with LiveNode(tmp_path, RECEIVER_CONFIG) as node:
        response, _ = push(node, timestamp=int(time.time()) - 86400 * 30)
        assert response.status_code == 204


def test_the_maintenance_pass_prunes_receipts_past_the_replay_window(tmp_path: Path) -> None:
    add_peer(tmp_path, SENDER, LINK)
    # a 3 s window (room for a slow request) keeps receipts 6 s; a 1 s lease runs the
    # maintenance pass every second
    config = RECEIVER_CONFIG + "  push_verification_clock_skew_seconds: 3\n"
    with LiveNode(tmp_path, config, env={"SYNTHORG_RUNNER_LEASE_SECONDS": "1"}) as node:
        response, delivery = push(node)
        assert response.status_code == 204
        pruned = node.wait_for_event("a2a.push.pruned", timeout=60)
        assert pruned["receipts"] >= 1
        # forgotten, and still refused: a replay of it now carries a stale timestamp
        replay, _ = push(node, delivery_id=delivery, timestamp=int(time.time()) - 60)
        assert replay.status_code == 401
        fresh, _ = push(node, delivery_id=delivery)
        assert fresh.status_code == 204  # its receipt was gone: taken as new
