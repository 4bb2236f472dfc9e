"""tasks/pushNotificationConfig/set|get|list|delete on a live node: A2A 0.3 shapes, owner
scoping (another peer's task is not found), the SSRF guard at set time, and the config that
message/send's configuration registers."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.helpers import (
    TASK_NOT_FOUND,
    Json,
    call,
    create_task,
    expect_error,
    expect_result,
    message,
    unique,
)
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

PEER, KEY = "peer-push", "key-push-5d1c9e7a3b2f"
OTHER, OTHER_KEY = "peer-other", "key-other-7b3a1c9e5d2f"
INVALID_PARAMS = -32602

CONFIG = f"""\
a2a:
  enabled: true
  node_name: node-push
  allowed_peers: [{PEER}, {OTHER}]
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
"""

PUBLIC_URL = "https://93.184.215.14/hook"  # a literal public address: no DNS in tests


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir: Path = tmp_path_factory.mktemp("push-configs")
    add_peer(data_dir, PEER, KEY)
    add_peer(data_dir, OTHER, OTHER_KEY)
    with LiveNode(data_dir, CONFIG) as live:
        yield live


@pytest.fixture()
def client(node: LiveNode) -> Iterator[httpx.Client]:
    with node.client(PEER, KEY) as peer_client:
        yield peer_client


@pytest.fixture()
def other(node: LiveNode) -> Iterator[httpx.Client]:
    with node.client(OTHER, OTHER_KEY) as other_client:
        yield other_client


def raw_result(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    body = json.loads(response.content)
    assert "error" not in body, body
    return body["result"]


def set_config(client: httpx.Client, task_id: str, config: Json) -> httpx.Response:
    return call(client, "tasks/pushNotificationConfig/set",
                {"taskId": task_id, "pushNotificationConfig": config})


def test_set_get_list_delete_round_trip(client: httpx.Client) -> None:
    task = create_task(client, agent_id="echo")
    stored = expect_result(set_config(client, task["id"], {"url": PUBLIC_URL, "token": "t-1"}))
    # without an id the config takes the task's
    assert stored == {"taskId": task["id"],
                      "pushNotificationConfig": {"url": PUBLIC_URL, "id": task["id"],
                                                 "token": "t-1"}}
    second = {"url": PUBLIC_URL, "id": "second",
              "authentication": {"schemes": ["Bearer"], "credentials": "c"}}
    expect_result(set_config(client, task["id"], second))
    got = expect_result(call(client, "tasks/pushNotificationConfig/get", {"id": task["id"]}))
    assert got == stored
    got = expect_result(call(client, "tasks/pushNotificationConfig/get",
                             {"id": task["id"], "pushNotificationConfigId": "second"}))
    assert got["pushNotificationConfig"] == second
    listed = raw_result(call(client, "tasks/pushNotificationConfig/list", {"id": task["id"]}))
    assert [c["pushNotificationConfig"]["id"] for c in listed] == sorted([task["id"], "second"])
    deleted = call(client, "tasks/pushNotificationConfig/delete",
                   {"id": task["id"], "pushNotificationConfigId": "second"})
    assert raw_result(deleted) is None
    listed = raw_result(call(client, "tasks/pushNotificationConfig/list", {"id": task["id"]}))
    assert [c["pushNotificationConfig"]["id"] for c in listed] == [task["id"]]
    missing = call(client, "tasks/pushNotificationConfig/get",
                   {"id": task["id"], "pushNotificationConfigId": "second"})
    expect_error(missing, code=INVALID_PARAMS, request_id=1)


def test_another_peers_task_is_not_found(client: httpx.Client, other: httpx.Client) -> None:
    task = create_task(client, agent_id="echo")
    expect_result(set_config(client, task["id"], {"url": PUBLIC_URL}))
    for response in (
        set_config(other, task["id"], {"url": PUBLIC_URL}),
        call(other, "tasks/pushNotificationConfig/get", {"id": task["id"]}),
        call(other, "tasks/pushNotificationConfig/list", {"id": task["id"]}),
        call(other, "tasks/pushNotificationConfig/delete",
             {"id": task["id"], "pushNotificationConfigId": task["id"]}),
    ):
        expect_error(response, code=TASK_NOT_FOUND, request_id=1)
    listed = raw_result(call(client, "tasks/pushNotificationConfig/list", {"id": task["id"]}))
    assert len(listed) == 1


@pytest.mark.parametrize("url,reason", [
    ("ftp://93.184.215.14/x", "http or https"),
    ("http://127.0.0.1:6379/hook", "127.0.0.1"),
    ("http://10.1.2.3/hook", "10.1.2.3"),
    ("http://169.254.169.254/latest/meta-data", "169.254.169.254"),
    ("http://[::1]/hook", "::1"),
    ("http://[::ffff:192.168.0.1]/hook", "::ffff:c0a8:1"),
    ("http://localhost/hook", "resolves to"),
    # IPv6 transition forms that carry a loopback or private IPv4 address, and site-local
    ("http://[::127.0.0.1]/hook", "127.0.0.1"),  # IPv4-compatible
    ("http://[::ffff:0:127.0.0.1]/hook", "127.0.0.1"),  # IPv4-translated
    ("http://[64:ff9b::7f00:1]/hook", "127.0.0.1"),  # NAT64
    ("http://[64:ff9b:1::a00:1]/hook", "local-use NAT64"),
    ("http://[2002:a9fe:a9fe::1]/hook", "169.254.169.254"),  # 6to4
    ("http://[fec0::1]/hook", "site-local"),
])
def test_targets_on_private_networks_are_refused_at_set_time(
    client: httpx.Client, url: str, reason: str
) -> None:
    task = create_task(client, agent_id="echo")
    error = expect_error(set_config(client, task["id"], {"url": url}), code=INVALID_PARAMS,
                         request_id=1)
    assert reason in error["message"]
    listed = raw_result(call(client, "tasks/pushNotificationConfig/list", {"id": task["id"]}))
    assert listed == []


def test_authentication_needs_a_scheme_the_node_sends(client: httpx.Client) -> None:
    task = create_task(client, agent_id="echo")
    bad = {"url": PUBLIC_URL, "authentication": {"schemes": ["Digest"], "credentials": "x"}}
    expect_error(set_config(client, task["id"], bad), code=INVALID_PARAMS, request_id=1)


@pytest.mark.parametrize(("config", "field"), [
    ({"token": "tok\r\nX-Injected: 1"}, "token"),
    ({"token": " spaced-token"}, "token"),
    ({"authentication": {"schemes": ["Bearer"], "credentials": "cred\r\nX-Injected: 1"}},
     "credentials"),
    ({"authentication": {"schemes": ["Bearer"], "credentials": "cr\u00e9dential"}},
     "credentials"),
    ({"authentication": {"schemes": ["Basic"], "credentials": "user:pa\nss"}}, "credentials"),
])
def test_a_credential_that_is_no_header_value_is_refused_unechoed(
    client: httpx.Client, config: Json, field: str
) -> None:
    task = create_task(client, agent_id="echo")
    error = expect_error(set_config(client, task["id"], {"url": PUBLIC_URL, **config}),
                         code=INVALID_PARAMS, request_id=1)
    [issue] = error["data"]["errors"]
    assert issue["loc"][-1] == field and issue["type"] == "string_pattern_mismatch"
    shown = json.dumps(error, ensure_ascii=False)
    assert not any(mark in shown for mark in ("Injected", "spaced", "crédential", "user:pa"))
    listed = raw_result(call(client, "tasks/pushNotificationConfig/list", {"id": task["id"]}))
    assert listed == []


def test_message_send_registers_its_push_config(client: httpx.Client) -> None:
    params = {"message": message("hi", agent_id="echo"),
              "configuration": {"pushNotificationConfig": {"url": PUBLIC_URL, "id": "p"}}}
    task = expect_result(call(client, "message/send", params))
    got = expect_result(call(client, "tasks/pushNotificationConfig/get",
                             {"id": task["id"], "pushNotificationConfigId": "p"}))
    assert got["pushNotificationConfig"]["url"] == PUBLIC_URL
    refused = {"message": message("hi", agent_id="echo"),
               "configuration": {"pushNotificationConfig": {"url": "http://127.0.0.1/x"}}}
    expect_error(call(client, "message/send", refused), code=INVALID_PARAMS, request_id=1)


def test_only_the_owners_own_receiver_is_allowed_on_a_private_address(
    client: httpx.Client,
) -> None:
    task = create_task(client, agent_id="echo")  # the catalog peers' endpoint: 127.0.0.1:9
    receiver = "http://127.0.0.1:9/api/v1/webhooks/node-push/a2a_push"
    expect_result(set_config(client, task["id"], {"url": receiver}))
    # the same endpoint on any other path, or with a query, is an ordinary push: refused
    for url in ("http://127.0.0.1:9/api/v1/x", receiver + "?x=1",
                "http://127.0.0.1:9/api/v1/webhooks/other/a2a_push"):
        expect_error(set_config(client, task["id"], {"url": url}), code=INVALID_PARAMS,
                     request_id=1)


def test_push_secrets_are_kept_sealed_on_disk(node: LiveNode, client: httpx.Client) -> None:
    """A config's token and credentials are encrypted at rest, as link secrets are; their
    owner still reads them back as set."""
    task = create_task(client, agent_id="echo")
    token, credentials = "tok-CANARY-4e1f0b", "cred-CANARY-9a7d2c"
    config = {"url": PUBLIC_URL, "id": "sealed", "token": token,
              "authentication": {"schemes": ["Bearer"], "credentials": credentials}}
    expect_result(set_config(client, task["id"], config))
    got = expect_result(call(client, "tasks/pushNotificationConfig/get",
                             {"id": task["id"], "pushNotificationConfigId": "sealed"}))
    assert got["pushNotificationConfig"] == config
    with sqlite3.connect(node.data_dir / "synthorg.db") as db:
        (body,) = db.execute(
            "SELECT body FROM push_configs WHERE task_id = ? AND config_id = 'sealed'",
            (task["id"],),
        ).fetchone()
    assert token not in body and credentials not in body
    assert json.loads(body)["url"] == PUBLIC_URL


# -- A2A 1.0: the same configs through the 1.0 methods ------------------------------------------


def v1(client: httpx.Client, method: str, params: Json) -> httpx.Response:
    return client.post("/api/v1/a2a/", json={"jsonrpc": "2.0", "id": 1, "method": method,
                                             "params": params},
                       headers={"A2A-Version": "1.0"})


def test_1_0_create_get_list_delete_round_trip(client: httpx.Client) -> None:
    task = create_task(client, agent_id="echo")
    created = expect_result(v1(client, "CreateTaskPushNotificationConfig",
                               {"taskId": task["id"], "url": PUBLIC_URL, "token": "t-1"}))
    # without an id the config takes the task's, as in 0.3
    assert created == {"taskId": task["id"], "id": task["id"], "url": PUBLIC_URL,
                       "token": "t-1"}
    second = {"taskId": task["id"], "id": "second", "url": PUBLIC_URL,
              "authentication": {"scheme": "Bearer", "credentials": "c"}}
    assert expect_result(v1(client, "CreateTaskPushNotificationConfig", second)) == second
    got = expect_result(v1(client, "GetTaskPushNotificationConfig",
                           {"taskId": task["id"], "id": "second"}))
    assert got == second
    # the 0.3 method reads the config the 1.0 one set
    old = expect_result(call(client, "tasks/pushNotificationConfig/get",
                             {"id": task["id"], "pushNotificationConfigId": "second"}))
    assert old["pushNotificationConfig"]["authentication"] == {"schemes": ["Bearer"],
                                                               "credentials": "c"}
    listed = expect_result(v1(client, "ListTaskPushNotificationConfigs", {"taskId": task["id"]}))
    assert [c["id"] for c in listed["configs"]] == sorted([task["id"], "second"])
    assert listed["nextPageToken"] == ""
    page = expect_result(v1(client, "ListTaskPushNotificationConfigs",
                            {"taskId": task["id"], "pageSize": 1}))
    assert len(page["configs"]) == 1 and page["nextPageToken"]
    rest = expect_result(v1(client, "ListTaskPushNotificationConfigs",
                            {"taskId": task["id"], "pageSize": 1,
                             "pageToken": page["nextPageToken"]}))
    assert [c["id"] for c in page["configs"] + rest["configs"]] == [
        c["id"] for c in listed["configs"]]
    assert rest["nextPageToken"] == ""
    deleted = v1(client, "DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "second"})
    assert raw_result(deleted) is None
    missing = v1(client, "GetTaskPushNotificationConfig", {"taskId": task["id"], "id": "second"})
    expect_error(missing, code=INVALID_PARAMS, request_id=1)


def test_1_0_refusals_are_those_of_0_3(client: httpx.Client, other: httpx.Client) -> None:
    task = create_task(client, agent_id="echo")
    expect_result(v1(client, "CreateTaskPushNotificationConfig",
                     {"taskId": task["id"], "url": PUBLIC_URL}))
    for method, params in (
        ("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": PUBLIC_URL}),
        ("GetTaskPushNotificationConfig", {"taskId": task["id"], "id": task["id"]}),
        ("ListTaskPushNotificationConfigs", {"taskId": task["id"]}),
        ("DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": task["id"]}),
    ):
        error = expect_error(v1(other, method, params), code=TASK_NOT_FOUND, request_id=1)
        assert error["data"][0]["reason"] == "TASK_NOT_FOUND"
    for bad in ({"taskId": task["id"], "url": "http://127.0.0.1:6379/hook"},
                {"taskId": task["id"], "url": PUBLIC_URL, "pushNotificationConfig": {}},
                {"url": PUBLIC_URL}):
        expect_error(v1(client, "CreateTaskPushNotificationConfig", bad), code=INVALID_PARAMS,
                     request_id=1)
    expect_error(v1(client, "ListTaskPushNotificationConfigs",
                    {"taskId": task["id"], "pageToken": "x"}), code=INVALID_PARAMS, request_id=1)


def test_1_0_send_message_registers_its_push_config(client: httpx.Client) -> None:
    msg = {"messageId": unique(), "role": "ROLE_USER", "parts": [{"text": "hi"}],
           "metadata": {"agentId": "echo"}}
    push = {"url": PUBLIC_URL, "id": "p1"}
    params = {"message": msg, "configuration": {"taskPushNotificationConfig": push}}
    task = expect_result(v1(client, "SendMessage", params))["task"]
    got = expect_result(v1(client, "GetTaskPushNotificationConfig",
                           {"taskId": task["id"], "id": "p1"}))
    assert got == {"taskId": task["id"], "id": "p1", "url": PUBLIC_URL}
    for refused in ({"url": "http://127.0.0.1/x"}, {"url": PUBLIC_URL, "taskId": "other"}):
        msg = {**msg, "messageId": msg["messageId"] + "x"}
        bad = {"message": msg, "configuration": {"taskPushNotificationConfig": refused}}
        expect_error(v1(client, "SendMessage", bad), code=INVALID_PARAMS, request_id=1)
