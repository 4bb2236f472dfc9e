"""DESIGN §8 against a live node: the seed's event names and payload keys on stderr, and no
secret or raw body ever written there.

These calls come from `peer-events`, a peer no other test uses, and carry unique request ids,
so each event can be matched to the call that caused it.
"""

from __future__ import annotations

import httpx
import pytest

from tests.integration.conftest import ALL_SECRETS, KEY_EVENTS, PEER_EVENTS, api_key_headers
from tests.integration.helpers import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    TASK_NOT_FOUND,
    UNAUTHENTICATED,
    envelope,
    expect_error,
    expect_result,
    get_task,
    message,
    post_body,
    send,
    unique,
)
from tests.integration.live import LiveNode

WRONG_KEY = "wrong-key-LEAKCHECK-61c0"
BODY_MARKER = "BODY-MARKER-LEAKCHECK-93af"


def test_bad_key_emits_auth_failed_with_peer_name_and_reason(
    gateway: LiveNode, anon: httpx.Client
) -> None:
    response = post_body(anon, b"{}", headers=api_key_headers(PEER_EVENTS, WRONG_KEY))
    expect_error(response, status=401, code=UNAUTHENTICATED)
    event = gateway.wait_for_event("a2a.inbound.auth_failed", peer_name=PEER_EVENTS)
    assert event["reason"] == "credential_mismatch"


def test_unlisted_peer_emits_auth_failed_with_its_reason(
    gateway: LiveNode, anon: httpx.Client
) -> None:
    peer = unique("stranger")
    expect_error(
        post_body(anon, b"{}", headers=api_key_headers(peer, KEY_EVENTS)), status=403, code=-32004
    )
    assert gateway.wait_for_event("a2a.inbound.auth_failed", peer_name=peer)["reason"]


def test_invalid_json_emits_parse_error(gateway: LiveNode, client_events: httpx.Client) -> None:
    expect_error(post_body(client_events, b'{"jsonrpc": '), code=PARSE_ERROR)
    event = gateway.wait_for_event("a2a.jsonrpc.parse_error", peer_name=PEER_EVENTS)
    assert event["request_id"] is None


def test_unknown_method_emits_method_not_found(
    gateway: LiveNode, client_events: httpx.Client
) -> None:
    request_id = unique("req")
    response = client_events.post("/api/v1/a2a/", json=envelope("tasks/list", {}, request_id))
    expect_error(response, code=METHOD_NOT_FOUND, request_id=request_id)
    event = gateway.wait_for_event("a2a.jsonrpc.method_not_found", request_id=request_id)
    assert event["method"] == "tasks/list"


def test_task_not_found_emits_method_rejected(
    gateway: LiveNode, client_events: httpx.Client
) -> None:
    task_id = unique("missing")
    expect_error(get_task(client_events, task_id), code=TASK_NOT_FOUND, request_id=1)
    event = gateway.wait_for_event("a2a.task.method_rejected", task_id=task_id)
    assert event["method"] == "tasks/get"
    assert event["peer_name"] == PEER_EVENTS


def test_invalid_params_emit_boundary_validation_failed(
    gateway: LiveNode, client_events: httpx.Client
) -> None:
    request_id = unique("req")
    response = client_events.post(
        "/api/v1/a2a/", json=envelope("tasks/get", {"historyLength": "x"}, request_id)
    )
    expect_error(response, code=INVALID_PARAMS, request_id=request_id)
    event = gateway.wait_for_event("api.boundary.validation_failed", request_id=request_id)
    assert event["method"] == "tasks/get"


def test_accepted_call_emits_inbound_received_with_method_and_request_id(
    gateway: LiveNode, client_events: httpx.Client
) -> None:
    request_id = unique("req")
    expect_result(send(client_events, message("hi"), request_id), request_id=request_id)
    event = gateway.wait_for_event("a2a.inbound.received", request_id=request_id)
    assert event["method"] == "message/send"
    assert event["peer_name"] == PEER_EVENTS


@pytest.mark.parametrize(
    "body",
    [
        f'{{"jsonrpc":"2.0","id":"leak-1","method":"tasks/get","params":{{"id":"{BODY_MARKER}!"}}}}',
        f'{{"jsonrpc":"2.0","id":"leak-2", "{BODY_MARKER}',
        f'{{"jsonrpc":"2.0","id":"leak-3","method":"message/send","params":{{"message":'
        f'{{"kind":"message","messageId":"leak-3","role":"user","parts":'
        f'[{{"kind":"text","text":"{BODY_MARKER}"}}]}}}}}}',
    ],
    ids=["invalid-params", "parse-error", "accepted"],
)
def test_no_event_line_holds_a_secret_or_a_raw_body(
    gateway: LiveNode, anon: httpx.Client, client_events: httpx.Client, body: str
) -> None:
    post_body(anon, body.encode(), headers=api_key_headers(PEER_EVENTS, WRONG_KEY))
    post_body(anon, body.encode(), headers={"X-A2A-Peer-Name": f"{KEY_EVENTS} misplaced"})
    post_body(client_events, body.encode())
    # Everything the node wrote for these calls is in once the closing call's event is.
    request_id = unique("fence")
    expect_error(
        client_events.post("/api/v1/a2a/", json=envelope("fence/x", {}, request_id)),
        code=METHOD_NOT_FOUND,
        request_id=request_id,
    )
    gateway.wait_for_event("a2a.jsonrpc.method_not_found", request_id=request_id)
    for line in list(gateway.lines):
        assert BODY_MARKER not in line
        assert WRONG_KEY not in line
        for secret in ALL_SECRETS:
            assert secret not in line
