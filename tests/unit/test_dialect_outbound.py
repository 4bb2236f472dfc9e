"""Which dialect the client calls a peer in, from the peer's card (synthorg/dialects/outbound.py)
and reading 1.0-only cards (synthorg/cards/peer_card.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from synthorg import jsonrpc
from synthorg.cards.peer_card import read_peer_card
from synthorg.delegation.client import build_message, send_params, stream_params
from synthorg.delegation.errors import RequestInvalid
from synthorg.dialects.outbound import PeerDialect, choose
from synthorg.dialects.outbound_v03 import params_v03
from synthorg.generated.models import (
    V1CancelTaskParams,
    V1CreateTaskPushNotificationConfigParams,
    V1GetTaskParams,
    V1SubscribeToTaskParams,
    V1TextPart,
)

ENDPOINT = "http://127.0.0.1:8100"
DEFAULT = ENDPOINT + "/api/v1/a2a/"


def card(*interfaces: dict[str, str], url: str | None = ENDPOINT + "/rpc") -> dict[str, Any]:
    document: dict[str, Any] = {"name": "p", "skills": [], "supportedInterfaces": list(interfaces)}
    if url is not None:
        document["url"] = url
    return document


def interface(
    version: str, url: str = ENDPOINT + "/rpc", binding: str = "JSONRPC"
) -> dict[str, str]:
    return {"url": url, "protocolBinding": binding, "protocolVersion": version, "tenant": "t"}


def test_a_card_offering_1_0_over_jsonrpc_is_called_in_1_0_at_that_url() -> None:
    read = read_peer_card(card(interface("0.3"), interface("1.0")))
    assert choose(read, ENDPOINT, DEFAULT) == PeerDialect("1.0", ENDPOINT + "/rpc")


def test_a_0_3_card_or_no_card_is_called_in_0_3_at_the_catalog_endpoint() -> None:
    assert choose(read_peer_card(card(interface("0.3.0"))), ENDPOINT, DEFAULT) == PeerDialect(
        "0.3", DEFAULT
    )
    assert choose(None, ENDPOINT, DEFAULT) == PeerDialect("0.3", DEFAULT)


def test_1_0_on_another_binding_or_origin_is_not_used() -> None:
    grpc = read_peer_card(card(interface("1.0", binding="GRPC")))
    assert choose(grpc, ENDPOINT, DEFAULT).version == "0.3"
    elsewhere = read_peer_card(card(interface("1.0", url="http://evil.example/rpc")))
    assert choose(elsewhere, ENDPOINT, DEFAULT) == PeerDialect("0.3", DEFAULT)


def test_a_1_0_card_without_url_is_read_from_its_jsonrpc_interface() -> None:
    read = read_peer_card(card(interface("1.0", url=ENDPOINT + "/a2a"), url=None))
    assert read.url == ENDPOINT + "/a2a"
    assert [i.protocolVersion for i in read.supportedInterfaces or []] == ["1.0"]


def test_unreadable_interfaces_are_left_out_not_a_reason_to_refuse_the_card() -> None:
    document = card(
        interface("1.0"),
        {"url": "ftp://x", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"protocolBinding": "JSONRPC"},
        "not an object",
    )
    read = read_peer_card(document)
    assert [i.url for i in read.supportedInterfaces or []] == [ENDPOINT + "/rpc"]
    assert read_peer_card({**card(), "supportedInterfaces": "nonsense"}).supportedInterfaces is None


# -- the calls themselves, as a 1.0 peer gets them ------------------------------------------

MESSAGE = build_message([V1TextPart(text="hi")], agent_id="echo", task_id="t-1",
                        context_id="c-1", message_id="m-1", metadata={"k": "v"})


def _wire(params: Any) -> dict[str, Any]:
    return json.loads(jsonrpc.call(params, 1))  # type: ignore[no-any-return]


def test_message_send_in_1_0_is_send_message_with_return_immediately_for_non_blocking() -> None:
    sent = _wire(send_params(MESSAGE, blocking=False))
    assert sent["method"] == "SendMessage"
    assert sent["params"] == {
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}],
                    "taskId": "t-1", "contextId": "c-1",
                    "metadata": {"k": "v", "agentId": "echo"}},
        "configuration": {"returnImmediately": True},
    }
    blocking = _wire(send_params(MESSAGE))
    assert "configuration" not in blocking["params"]
    assert _wire(stream_params(MESSAGE))["method"] == "SendStreamingMessage"


def test_message_send_in_0_3_is_message_send_with_blocking_false_for_non_blocking() -> None:
    sent = _wire(params_v03(send_params(MESSAGE, blocking=False)))
    assert sent["method"] == "message/send"
    assert sent["params"] == {
        "message": {"kind": "message", "messageId": "m-1", "role": "user",
                    "parts": [{"kind": "text", "text": "hi"}], "taskId": "t-1",
                    "contextId": "c-1", "metadata": {"k": "v", "agentId": "echo"}},
        "configuration": {"blocking": False},
    }
    assert "configuration" not in _wire(params_v03(send_params(MESSAGE)))["params"]
    assert _wire(params_v03(stream_params(MESSAGE)))["method"] == "message/stream"


PUSH = V1CreateTaskPushNotificationConfigParams.model_validate({
    "method": "CreateTaskPushNotificationConfig", "taskId": "t-1",
    "url": "https://a.example/push", "id": "f", "token": "tok",
    "authentication": {"scheme": "Bearer", "credentials": "tok"}})


def test_task_calls_and_the_push_config_in_1_0() -> None:
    get = _wire(V1GetTaskParams(method="GetTask", id="t-1", historyLength=0))
    assert (get["method"], get["params"]) == ("GetTask", {"id": "t-1", "historyLength": 0})
    push = _wire(PUSH)
    assert push["method"] == "CreateTaskPushNotificationConfig"
    assert push["params"] == {"taskId": "t-1", "url": "https://a.example/push", "id": "f",
                              "token": "tok",
                              "authentication": {"scheme": "Bearer", "credentials": "tok"}}


def test_task_calls_and_the_push_config_in_0_3() -> None:
    get = _wire(params_v03(V1GetTaskParams(method="GetTask", id="t-1", historyLength=0)))
    assert (get["method"], get["params"]) == ("tasks/get", {"id": "t-1", "historyLength": 0})
    cancel = _wire(params_v03(V1CancelTaskParams(method="CancelTask", id="t-1")))
    assert (cancel["method"], cancel["params"]) == ("tasks/cancel", {"id": "t-1"})
    follow = _wire(params_v03(V1SubscribeToTaskParams(method="SubscribeToTask", id="t-1")))
    assert (follow["method"], follow["params"]) == ("tasks/resubscribe", {"id": "t-1"})
    push = _wire(params_v03(PUSH))
    assert push["method"] == "tasks/pushNotificationConfig/set"
    assert push["params"] == {"taskId": "t-1", "pushNotificationConfig": {
        "url": "https://a.example/push", "id": "f", "token": "tok",
        "authentication": {"schemes": ["Bearer"], "credentials": "tok"}}}


def test_a_message_past_the_specs_bounds_is_not_sent() -> None:
    with pytest.raises(RequestInvalid):
        build_message([V1TextPart(text="x")], metadata={"visited": list(range(17))})
