"""Direct replies on a live node: an agent that answers a new message with a Message keeps no
task. 0.3's message/send answers the Message (kind message), 1.0's SendMessage {message};
the streams answer it as their one event; a follow-up to a task is still answered in it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.helpers import envelope, expect_result, unique
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

Json = dict[str, Any]
PEER, KEY = "peer-direct", "key-direct-8e2c4a6b1d3f"
RPC = "/api/v1/a2a/"
PUBLIC_URL = "https://93.184.215.14/hook"  # a literal public address: no DNS in tests
CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{PEER}]
agents:
  - {{id: replier, name: Replier, executor: {{kind: echo, options: {{reply: message}}}}}}
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
  - {{id: conformance, name: Conformance, executor: {{kind: conformance}}}}
"""


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir: Path = tmp_path_factory.mktemp("direct-replies")
    add_peer(data_dir, PEER, KEY)
    with LiveNode(data_dir, CONFIG) as live:
        yield live


@pytest.fixture(scope="module")
def client(node: LiveNode) -> Iterator[httpx.Client]:
    with node.client(PEER, KEY) as peer_client:
        yield peer_client


def call(client: httpx.Client, method: str, params: Json, version: str | None = None) -> Json:
    headers = {"A2A-Version": version} if version else {}
    return expect_result(client.post(RPC, json=envelope(method, params), headers=headers))


def stream(client: httpx.Client, method: str, params: Json) -> list[Json]:
    with client.stream("POST", RPC, json=envelope(method, params)) as answer:
        assert answer.status_code == 200
        lines = [line for line in answer.iter_lines() if line.startswith("data:")]
    return [json.loads(line[len("data:"):])["result"] for line in lines]


def message_03(text: str, agent_id: str = "replier", **extra: Any) -> Json:
    return {"kind": "message", "messageId": unique(), "role": "user",
            "parts": [{"kind": "text", "text": text}], "metadata": {"agentId": agent_id},
            **extra}


def message_1(text: str, agent_id: str = "replier", message_id: str | None = None) -> Json:
    return {"messageId": message_id or unique(), "role": "ROLE_USER",
            "parts": [{"text": text}], "metadata": {"agentId": agent_id}}


def test_message_send_answers_the_agents_message_and_stores_no_task(
    client: httpx.Client,
) -> None:
    before = call(client, "ListTasks", {}, "1.0")["totalSize"]
    reply = call(client, "message/send", {"message": message_03("hi there",
                                                                contextId="ctx-direct")})
    assert reply["kind"] == "message" and reply["role"] == "agent"
    assert reply["parts"] == [{"kind": "text", "text": "hi there"}]
    assert reply["contextId"] == "ctx-direct" and "taskId" not in reply
    assert call(client, "ListTasks", {}, "1.0")["totalSize"] == before


def test_send_message_answers_a_wrapped_message_in_1_0(client: httpx.Client) -> None:
    result = call(client, "SendMessage", {"message": message_1("hello")}, "1.0")
    assert set(result) == {"message"}
    assert result["message"]["role"] == "ROLE_AGENT"
    assert result["message"]["parts"] == [{"text": "hello"}]


def test_a_push_config_sent_with_a_direct_reply_is_checked_and_not_stored(
    client: httpx.Client,
) -> None:
    configuration = {"pushNotificationConfig": {"url": PUBLIC_URL}}
    reply = call(client, "message/send", {"message": message_03("push?"),
                                          "configuration": configuration})
    assert reply["kind"] == "message"
    bad = {"pushNotificationConfig": {"url": "http://127.0.0.1:6379/hook"}}
    refused = client.post(RPC, json=envelope("message/send", {
        "message": message_03("push?"), "configuration": bad}))
    assert "error" in refused.json()


@pytest.mark.parametrize(("method", "message"), [
    ("message/stream", message_03("streamed")),
    ("SendStreamingMessage", message_1("streamed")),
])
def test_a_stream_answers_the_reply_as_its_one_event(
    client: httpx.Client, method: str, message: Json
) -> None:
    events = stream(client, method, {"message": message})
    assert len(events) == 1
    [event] = events
    reply = event if method == "message/stream" else event["message"]
    assert reply["parts"][0]["text"] == "streamed"
    assert "taskId" not in reply


def test_an_agent_without_the_option_still_answers_a_task(client: httpx.Client) -> None:
    task = call(client, "message/send", {"message": message_03("task", agent_id="echo")})
    assert task["kind"] == "task" and task["status"]["state"] == "completed"


def test_the_conformance_agent_replies_directly_for_the_kits_prefix(
    client: httpx.Client,
) -> None:
    result = call(client, "SendMessage", {"message": message_1(
        "TCK artifact test", agent_id="conformance",
        message_id=unique("tck-message-response"))}, "1.0")
    assert result["message"]["parts"] == [{"text": "Direct message response"}]
    other = call(client, "SendMessage", {"message": message_1("x", agent_id="conformance")},
                 "1.0")
    assert set(other) == {"task"}
