"""What the 1.0 dialect accepts as input, on a live node: every 1.0 operation answers the
same whether its members are spelled by their JSON names or by their proto field names
(ProtoJSON input), answers in JSON names only, and refuses a member sent under both."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.helpers import (
    INVALID_PARAMS,
    envelope,
    expect_error,
    expect_result,
    unique,
)
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

Json = dict[str, Any]
PEER, KEY = "peer-v1-input", "key-v1-input-3c9e1a7b5d2f"
RPC = "/api/v1/a2a/"
V1 = {"A2A-Version": "1.0"}
PUBLIC_URL = "https://93.184.215.14/hook"  # a literal public address: no DNS in tests
CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{PEER}]
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
  - {{id: parker, name: Parker, executor: {{kind: park}}}}
"""


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir: Path = tmp_path_factory.mktemp("v1-input")
    add_peer(data_dir, PEER, KEY)
    with LiveNode(data_dir, CONFIG) as live:
        yield live


@pytest.fixture(scope="module")
def client(node: LiveNode) -> Iterator[httpx.Client]:
    with node.client(PEER, KEY) as peer_client:
        yield peer_client


def v1(client: httpx.Client, method: str, params: Json) -> httpx.Response:
    return client.post(RPC, json=envelope(method, params), headers=V1)


def v1_stream(client: httpx.Client, method: str, params: Json) -> list[Json]:
    with client.stream("POST", RPC, json=envelope(method, params), headers=V1) as answer:
        assert answer.status_code == 200
        lines = [line for line in answer.iter_lines() if line.startswith("data:")]
    return [json.loads(line[len("data:"):])["result"] for line in lines]


def snake_keys(value: Any) -> list[str]:
    """Every member name of an answer that holds an underscore, free-form objects aside (none
    may: answers use JSON names only)."""
    if isinstance(value, dict):
        return [k for k in value if "_" in k] + [
            name for k, member in value.items() if k not in ("metadata", "data")
            for name in snake_keys(member)
        ]
    if isinstance(value, list):
        return [name for item in value for name in snake_keys(item)]
    return []


def message(camel: bool, agent_id: str = "echo", **extra: Any) -> Json:
    """A user message naming every member of a message and a part it can, in one spelling."""
    names = ("messageId", "contextId", "mediaType") if camel else (
        "message_id", "context_id", "media_type")
    message_id, context_id, media_type = names
    return {
        message_id: unique(),
        context_id: unique("ctx"),
        "role": "ROLE_USER",
        "parts": [{"text": "hello"}, {"raw": "aGk=", media_type: "text/plain"},
                  {"data": {"media_type": 1}}],
        # a free-form object keeps the caller's spelling
        "metadata": {"agentId": agent_id, "context_id": "mine"},
        **extra,
    }


@pytest.mark.parametrize("camel", [True, False], ids=["json-names", "proto-names"])
def test_every_1_0_operation_takes_either_spelling(client: httpx.Client, camel: bool) -> None:
    """A member the params do not define is invalid params, so each call's result shows its
    members were read; the answers are compared where a member changes them."""
    def name(json_name: str, proto: str) -> str:
        return json_name if camel else proto

    # SendMessage, its configuration included
    configuration = {
        name("acceptedOutputModes", "accepted_output_modes"): ["text/plain"],
        name("historyLength", "history_length"): 1,
        name("returnImmediately", "return_immediately"): False,
        name("taskPushNotificationConfig", "task_push_notification_config"): {
            "url": PUBLIC_URL, "id": "p1"},
    }
    first = message(camel, agent_id="parker")
    task = expect_result(v1(client, "SendMessage",
                            {"message": first, "configuration": configuration}))["task"]
    assert snake_keys(task) == []
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    context_id = task["contextId"]
    assert context_id == first[name("contextId", "context_id")]

    # GetTask
    got = expect_result(v1(client, "GetTask", {
        "id": task["id"], name("historyLength", "history_length"): 0}))
    assert got["id"] == task["id"] and got.get("history", []) == []
    full = expect_result(v1(client, "GetTask", {"id": task["id"]}))
    sent = full["history"][0]
    assert sent["metadata"] == {"agentId": "parker", "context_id": "mine"}
    assert sent["parts"][1:] == [{"raw": "aGk=", "mediaType": "text/plain"},
                                 {"data": {"media_type": 1}}]

    # ListTasks: every filter and the paging members
    listed = expect_result(v1(client, "ListTasks", {
        name("contextId", "context_id"): context_id,
        name("pageSize", "page_size"): 1,
        name("pageToken", "page_token"): "",
        name("historyLength", "history_length"): 0,
        name("includeArtifacts", "include_artifacts"): True,
        name("statusTimestampAfter", "status_timestamp_after"): "2000-01-01T00:00:00Z",
        "status": "TASK_STATE_INPUT_REQUIRED",
    }))
    assert [t["id"] for t in listed["tasks"]] == [task["id"]]
    assert listed["pageSize"] == 1 and snake_keys(listed) == []

    # the four push-config operations
    task_id = name("taskId", "task_id")
    created = expect_result(v1(client, "CreateTaskPushNotificationConfig", {
        task_id: task["id"], "id": "p2", "url": PUBLIC_URL}))
    assert created == {"taskId": task["id"], "id": "p2", "url": PUBLIC_URL}
    got_config = expect_result(v1(client, "GetTaskPushNotificationConfig",
                                  {task_id: task["id"], "id": "p1"}))
    assert got_config["taskId"] == task["id"] and got_config["id"] == "p1"
    configs = expect_result(v1(client, "ListTaskPushNotificationConfigs", {
        task_id: task["id"], name("pageSize", "page_size"): 1,
        name("pageToken", "page_token"): "1"}))
    assert [c["id"] for c in configs["configs"]] == ["p2"] and snake_keys(configs) == []
    deleted = v1(client, "DeleteTaskPushNotificationConfig", {task_id: task["id"], "id": "p2"})
    assert deleted.json() == {"jsonrpc": "2.0", "id": 1, "result": None}

    # SendStreamingMessage answers the follow-up, naming the task by the spelling's taskId
    follow_up = message(camel, agent_id="parker", **{
        name("taskId", "task_id"): task["id"],
        name("referenceTaskIds", "reference_task_ids"): [task["id"]],
    })
    follow_up[name("contextId", "context_id")] = context_id
    events = v1_stream(client, "SendStreamingMessage", {"message": follow_up})
    assert events and snake_keys(events) == []

    # SubscribeToTask, CancelTask and GetExtendedAgentCard have no member with two spellings;
    # they answer in JSON names all the same.
    parked = expect_result(v1(client, "SendMessage",
                              {"message": message(camel, agent_id="parker")}))["task"]
    assert snake_keys(v1_stream(client, "SubscribeToTask", {"id": parked["id"]})) == []
    canceled = expect_result(v1(client, "CancelTask", {"id": parked["id"]}))
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    card = expect_result(v1(client, "GetExtendedAgentCard", {}))
    assert snake_keys(card) == []


@pytest.mark.parametrize(
    ("method", "params", "loc"),
    [
        ("ListTasks", {"contextId": "a", "context_id": "b"}, ["contextId"]),
        ("GetTask", {"id": "t", "historyLength": 1, "history_length": 1}, ["historyLength"]),
        ("SendMessage", {"message": {"messageId": "m", "message_id": "m", "role": "ROLE_USER",
                                     "parts": [{"text": "x"}]}}, ["message", "messageId"]),
        ("GetTaskPushNotificationConfig", {"taskId": "t", "task_id": "t", "id": "p"},
         ["taskId"]),
    ],
    ids=["list", "get", "send-nested", "push-get"],
)
def test_a_member_sent_under_both_names_is_invalid_params(
    client: httpx.Client, method: str, params: Json, loc: list[str]
) -> None:
    error = expect_error(v1(client, method, params), code=INVALID_PARAMS, request_id=1)
    _, bad_request = error["data"]
    fields = [violation["field"] for violation in bad_request["fieldViolations"]]
    assert ".".join(loc) in fields


def test_proto_names_are_the_1_0_dialects_only(client: httpx.Client) -> None:
    """0.3 is JSON Schema, not ProtoJSON: a snake-case member there is an unknown member."""
    answer = client.post(RPC, json=envelope("tasks/get", {"id": "t", "history_length": 1}),
                         headers={"A2A-Version": "0.3"})
    expect_error(answer, code=INVALID_PARAMS, request_id=1)


@pytest.mark.parametrize("tenant", [None, ""], ids=["absent", "empty"])
def test_the_nodes_own_tenant_is_served(client: httpx.Client, tenant: str | None) -> None:
    extra = {} if tenant is None else {"tenant": tenant}
    task = expect_result(v1(client, "SendMessage", {"message": message(True), **extra}))["task"]
    assert expect_result(v1(client, "GetTask", {"id": task["id"], **extra}))["id"] == task["id"]
    expect_result(v1(client, "ListTasks", extra))
    expect_result(v1(client, "GetExtendedAgentCard", extra))


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("GetTask", {"id": "t", "tenant": "other"}, "tenant"),
        ("ListTasks", {"tenant": "acme"}, "tenant"),
        ("GetExtendedAgentCard", {"tenant": "acme"}, "tenant"),
        ("SendMessage", {"message": {"messageId": "m", "role": "ROLE_USER",
                                     "parts": [{"text": "x"}]},
                         "configuration": {"taskPushNotificationConfig": {
                             "url": PUBLIC_URL, "tenant": "acme"}}},
         "configuration.taskPushNotificationConfig.tenant"),
    ],
    ids=["get", "list", "card", "nested"],
)
def test_another_tenant_is_refused_clearly(
    client: httpx.Client, method: str, params: Json, field: str
) -> None:
    error = expect_error(v1(client, method, params), code=INVALID_PARAMS, request_id=1)
    _, bad_request = error["data"]
    violations = {v["field"]: v["description"] for v in bad_request["fieldViolations"]}
    assert "unknown tenant" in violations[field]


def test_a_tenant_inside_metadata_is_the_callers_own(client: httpx.Client) -> None:
    msg = message(True)
    msg["metadata"]["tenant"] = "anything"
    expect_result(v1(client, "SendMessage", {"message": msg}))
