"""Which binding the client calls a peer in (synthorg/dialects/outbound.py), and the HTTP+JSON
requests and error reading it makes there (synthorg/delegation/rest_binding.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from synthorg.cards.peer_card import read_peer_card
from synthorg.delegation.client import build_message, send_params, stream_params
from synthorg.delegation.rest_binding import default_rest_url, rest_call, status_error
from synthorg.dialects.errors import http_error
from synthorg.dialects.outbound import BindingUnusable, PeerDialect, choose
from synthorg.generated import constants as spec
from synthorg.generated.models import (
    V1CancelTaskParams,
    V1CreateTaskPushNotificationConfigParams,
    V1GetTaskParams,
    V1SubscribeToTaskParams,
    V1TextPart,
)

ENDPOINT = "http://127.0.0.1:8100"
DEFAULT = ENDPOINT + "/api/v1/a2a/"
DEFAULT_REST = ENDPOINT + "/api/v1/a2a/rest"
RPC, REST = ENDPOINT + "/rpc", ENDPOINT + "/rest"


def card(*interfaces: tuple[str, str, str]) -> Any:
    return read_peer_card({"name": "p", "skills": [], "url": RPC, "supportedInterfaces": [
        {"url": url, "protocolBinding": binding, "protocolVersion": version}
        for binding, version, url in interfaces
    ]})


def chosen(read: Any, configured: str | None = None) -> PeerDialect:
    return choose(read, ENDPOINT, DEFAULT, configured, DEFAULT_REST)


def test_nothing_configured_and_json_rpc_first_is_todays_choice() -> None:
    both = card(("JSONRPC", "1.0", RPC), ("HTTP+JSON", "1.0", REST))
    assert chosen(both) == PeerDialect("1.0", RPC, "JSONRPC")
    # a 0.3 JSON-RPC entry first: JSON-RPC as before (1.0 if the card offers it, else 0.3)
    old_first = card(("JSONRPC", "0.3", RPC), ("HTTP+JSON", "1.0", REST), ("JSONRPC", "1.0", RPC))
    assert chosen(old_first) == PeerDialect("1.0", RPC, "JSONRPC")
    assert chosen(card(("JSONRPC", "0.3", RPC), ("HTTP+JSON", "1.0", REST))) == PeerDialect(
        "0.3", DEFAULT)
    assert chosen(None) == PeerDialect("0.3", DEFAULT)


def test_the_cards_first_interface_in_a_binding_spoken_here_is_chosen() -> None:
    rest_first = card(("GRPC", "1.0", ENDPOINT), ("HTTP+JSON", "1.0", REST),
                      ("JSONRPC", "1.0", RPC))
    assert chosen(rest_first) == PeerDialect("1.0", REST, "HTTP+JSON")
    assert chosen(card(("HTTP+JSON", "1.0", REST))) == PeerDialect("1.0", REST, "HTTP+JSON")
    # HTTP+JSON is spoken in 1.0 only; another origin never gets our credentials
    assert chosen(card(("HTTP+JSON", "0.3", REST), ("JSONRPC", "1.0", RPC))).binding == "JSONRPC"
    elsewhere = card(("HTTP+JSON", "1.0", "http://evil.example/rest"), ("JSONRPC", "1.0", RPC))
    assert chosen(elsewhere) == PeerDialect("1.0", RPC, "JSONRPC")


def test_the_operators_binding_comes_before_the_cards_order() -> None:
    both = card(("JSONRPC", "1.0", RPC), ("HTTP+JSON", "1.0", REST))
    assert chosen(both, "HTTP+JSON") == PeerDialect("1.0", REST, "HTTP+JSON")
    assert chosen(card(("HTTP+JSON", "1.0", REST)), "JSONRPC") == PeerDialect("0.3", DEFAULT)
    # configured but not on the card (or no card): a peer of ours serves it at its own path
    assert chosen(None, "HTTP+JSON") == PeerDialect("1.0", DEFAULT_REST, "HTTP+JSON")
    assert default_rest_url(ENDPOINT + "/") == DEFAULT_REST
    # gRPC configured, and the card lists no gRPC target: not sent in another binding
    with pytest.raises(BindingUnusable, match=r"lists no A2A 1\.0 gRPC interface"):
        chosen(both, "GRPC")


def message() -> Any:
    return build_message([V1TextPart(text="hi")], message_id="m-1", task_id="t1")


def test_each_call_is_its_route() -> None:
    send = rest_call(REST, send_params(message(), blocking=False))
    assert (send.http_method, send.url) == ("POST", REST + "/message:send")
    body = json.loads(send.body or b"")
    assert "method" not in body and body["configuration"]["returnImmediately"] is True
    assert body["message"]["messageId"] == "m-1" and body["message"]["role"] == "ROLE_USER"
    stream = rest_call(REST + "/", stream_params(message()))
    assert (stream.http_method, stream.url) == ("POST", REST + "/message:stream")
    get = rest_call(REST, V1GetTaskParams(method=spec.V1_GET_TASK, id="t:1", historyLength=3))
    assert get == ("GET", REST + "/tasks/t%3A1?historyLength=3", None)
    cancel = rest_call(REST, V1CancelTaskParams(method=spec.V1_CANCEL_TASK, id="t1"))
    assert (cancel.http_method, cancel.url) == ("POST", REST + "/tasks/t1:cancel")
    subscribe = rest_call(REST, V1SubscribeToTaskParams(method=spec.V1_SUBSCRIBE_TO_TASK,
                                                        id="t1"))
    assert subscribe == ("GET", REST + "/tasks/t1:subscribe", None)
    push = rest_call(REST, V1CreateTaskPushNotificationConfigParams(
        method=spec.V1_CREATE_TASK_PUSH_NOTIFICATION_CONFIG, taskId="t1",
        url="https://a.example/push", id="c"))
    assert (push.http_method, push.url) == ("POST", REST + "/tasks/t1/pushNotificationConfigs")
    assert json.loads(push.body or b"")["url"] == "https://a.example/push"


@pytest.mark.parametrize("error", [
    spec.TASK_NOT_FOUND, spec.TASK_NOT_CANCELABLE, spec.UNKNOWN_AGENT, spec.TASK_BUSY,
    spec.INVALID_PARAMS, spec.V1_UNSUPPORTED_OPERATION, spec.V1_CONTENT_TYPE_NOT_SUPPORTED,
    spec.MESSAGE_ID_CONFLICT,
])
def test_a_google_rpc_status_reads_back_as_its_error(error: spec.RpcErrorSpec) -> None:
    # what our own HTTP+JSON binding answers, read by the client
    status, body = http_error(error, "said so")
    assert status_error(status, json.loads(body)) == (error, "said so")


def test_a_status_without_a_reason_we_know_is_read_by_its_http_status() -> None:
    body = {"error": {"code": 404, "message": "nope", "details": [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "ELSEWHERE"}]}}
    assert status_error(404, body) == (spec.METHOD_NOT_FOUND, "nope")
    assert status_error(500, {"error": {}}) == (spec.INTERNAL_ERROR, spec.INTERNAL_ERROR.message)
    assert status_error(400, {"error": "text"}) is None
    assert status_error(400, [1]) is None
