"""A2A 1.0's HTTP+JSON binding on a live node: every route, the same answers as the JSON-RPC
1.0 dialect for the same task, the same gates, errors as google.rpc.Status, another peer's task
answered as a missing one, ProtoJSON names, and the streams over the task's durable log."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from synthorg.gateway.rest import PREFIX
from tests.integration.helpers import envelope, expect_result, unique
from tests.integration.live import LiveNode
from tests.integration.test_streams_live import Event, events_of_lines
from tests.support.catalog import add_peer

Json = dict[str, Any]
PEER, KEY = "peer-rest", "key-rest-3c9e1a7d5b2f"
OTHER, OTHER_KEY = "peer-rest-other", "key-rest-other-8f2d4b6a0c1e"
UNLISTED, UNLISTED_KEY = "peer-rest-unlisted", "key-rest-unlisted-1a2b3c4d5e6f"
LIMIT = 16 * 1024
PUBLIC_URL = "https://93.184.215.14/hook"  # a literal public address: no DNS in tests
V1 = {"A2A-Version": "1.0"}
REST = PREFIX.rstrip("/")
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
ADMIN_TOKEN = "admin-token-for-rest-tests-4b8e2c6a0d1f"

CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{PEER}, {OTHER}]
  max_request_body_bytes: {LIMIT}
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
  - {{id: parker, name: Parker, executor: {{kind: park}}}}
  - id: quick
    name: Quick writer
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {{seconds: 0.3, chunks: 3}}
  - id: slow
    name: Slow writer
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {{seconds: 60, chunks: 60}}
"""


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir: Path = tmp_path_factory.mktemp("rest")
    add_peer(data_dir, PEER, KEY)
    add_peer(data_dir, OTHER, OTHER_KEY)
    add_peer(data_dir, UNLISTED, UNLISTED_KEY)
    with LiveNode(data_dir, CONFIG, env={"SYNTHORG_ADMIN_TOKEN": ADMIN_TOKEN}) as live:
        yield live


@pytest.fixture()
def client(node: LiveNode) -> Iterator[httpx.Client]:
    with node.client(PEER, KEY) as peer_client:
        yield peer_client


@pytest.fixture()
def other(node: LiveNode) -> Iterator[httpx.Client]:
    with node.client(OTHER, OTHER_KEY) as other_client:
        yield other_client


def v1_message(text: str, agent_id: str = "echo") -> Json:
    return {"messageId": unique(), "role": "ROLE_USER", "parts": [{"text": text}],
            "metadata": {"agentId": agent_id}}


def ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()


def rpc(client: httpx.Client, method: str, params: Json) -> Any:
    return expect_result(client.post("/api/v1/a2a/", json=envelope(method, params), headers=V1))


def rpc_error(client: httpx.Client, method: str, params: Json) -> Json:
    response = client.post("/api/v1/a2a/", json=envelope(method, params), headers=V1)
    error = response.json()["error"]
    assert isinstance(error, dict)
    return error


def status_error(response: httpx.Response, status: int, reason: str) -> Json:
    """A google.rpc.Status answer: its HTTP status, code and ErrorInfo reason."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"code", "status", "message", "details"}
    assert error["code"] == status
    info = error["details"][0]
    assert info["@type"] == ERROR_INFO and info["reason"] == reason, error
    assert isinstance(error, dict)
    return error


def send(client: httpx.Client, text: str = "hello", agent: str = "echo", **body: Any) -> Json:
    answer = ok(client.post(f"{REST}/message:send", json={"message": v1_message(text, agent),
                                                           **body}))
    assert set(answer) == {"task"}
    task = answer["task"]
    assert isinstance(task, dict)
    return task


def sse(response: httpx.Response) -> Iterator[Event]:
    assert response.status_code == 200, response.read()
    assert response.headers["content-type"].startswith("text/event-stream")
    return events_of_lines(response.iter_lines())


# -- the routes, answered as JSON-RPC answers them -----------------------------------------


def test_send_get_and_list_answer_what_json_rpc_answers(client: httpx.Client) -> None:
    task = send(client, "hello rest")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    got = ok(client.get(f"{REST}/tasks/{task['id']}"))
    assert got == rpc(client, "GetTask", {"id": task["id"]}) == task
    short = ok(client.get(f"{REST}/tasks/{task['id']}", params={"historyLength": 1}))
    assert short == rpc(client, "GetTask", {"id": task["id"], "historyLength": 1})
    assert len(short["history"]) == 1
    query = {"contextId": task["contextId"], "pageSize": 5, "historyLength": 0,
             "includeArtifacts": "true", "status": "TASK_STATE_COMPLETED"}
    listed = ok(client.get(f"{REST}/tasks", params=query))
    params = {**query, "includeArtifacts": True}
    assert listed == rpc(client, "ListTasks", params)
    assert [t["id"] for t in listed["tasks"]] == [task["id"]]
    assert "history" not in listed["tasks"][0] and "artifacts" in listed["tasks"][0]


def test_cancel_answers_the_task_then_400_as_json_rpc_answers_32002(client: httpx.Client) -> None:
    parked = send(client, "park me", "parker")
    assert parked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    # No body and no Content-Type: the request message is all in the path.
    canceled = ok(client.post(f"{REST}/tasks/{parked['id']}:cancel"))
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert canceled == rpc(client, "GetTask", {"id": parked["id"]})
    again = status_error(client.post(f"{REST}/tasks/{parked['id']}:cancel", json={}), 400,
                         "TASK_NOT_CANCELABLE")
    assert again["status"] == "FAILED_PRECONDITION"
    rpc_refusal = rpc_error(client, "CancelTask", {"id": parked["id"]})
    assert again["details"] == rpc_refusal["data"]
    assert again["message"] == rpc_refusal["message"]


def test_another_peers_task_is_answered_as_a_missing_one(
    client: httpx.Client, other: httpx.Client
) -> None:
    task = send(client)
    missing = unique("missing")
    routes = [
        ("GET", "/tasks/{}"), ("POST", "/tasks/{}:cancel"), ("GET", "/tasks/{}:subscribe"),
        ("POST", "/tasks/{}:subscribe"), ("GET", "/tasks/{}/pushNotificationConfigs"),
        ("GET", "/tasks/{}/pushNotificationConfigs/c1"),
        ("DELETE", "/tasks/{}/pushNotificationConfigs/c1"),
    ]
    for method, route in routes:
        theirs = other.request(method, REST + route.format(task["id"]))
        absent = client.request(method, REST + route.format(missing))
        assert theirs.status_code == absent.status_code == 404, (route, theirs.text)
        assert theirs.content == absent.content.replace(missing.encode(), task["id"].encode())
        status_error(theirs, 404, "TASK_NOT_FOUND")
    create = other.post(f"{REST}/tasks/{task['id']}/pushNotificationConfigs",
                        json={"url": PUBLIC_URL})
    status_error(create, 404, "TASK_NOT_FOUND")
    listed = ok(other.get(f"{REST}/tasks", params={"contextId": task["contextId"]}))
    assert listed["tasks"] == []


def test_push_config_routes_round_trip(client: httpx.Client) -> None:
    task = send(client)
    base = f"{REST}/tasks/{task['id']}/pushNotificationConfigs"
    stored = ok(client.post(base, json={"url": PUBLIC_URL, "id": "c1", "token": "t-1"}))
    assert stored == {"taskId": task["id"], "id": "c1", "url": PUBLIC_URL, "token": "t-1"}
    # The path's taskId may be repeated in the body; ProtoJSON's names are read too.
    ok(client.post(base, json={"task_id": task["id"], "id": "c2", "url": PUBLIC_URL}))
    assert ok(client.get(f"{base}/c1")) == stored
    listed = ok(client.get(base))
    assert listed == rpc(client, "ListTaskPushNotificationConfigs", {"taskId": task["id"]})
    assert [c["id"] for c in listed["configs"]] == ["c1", "c2"]
    page = ok(client.get(base, params={"pageSize": 1}))
    assert [c["id"] for c in page["configs"]] == ["c1"] and page["nextPageToken"] == "1"
    assert ok(client.delete(f"{base}/c2")) == {}
    assert [c["id"] for c in ok(client.get(base))["configs"]] == ["c1"]
    mismatch = client.post(base, json={"taskId": "another", "url": PUBLIC_URL})
    error = status_error(mismatch, 400, "INVALID_PARAMS")
    assert error["details"][1]["fieldViolations"][0]["field"] == "taskId"


def test_extended_card_route_answers_the_json_rpc_card(client: httpx.Client) -> None:
    card = ok(client.get(f"{REST}/extendedAgentCard"))
    assert card == rpc(client, "GetExtendedAgentCard", {})


def test_proto_field_names_are_read_as_json_rpc_reads_them(client: httpx.Client) -> None:
    msg = v1_message("snake")
    body = {"message": {"message_id": msg["messageId"], "role": "ROLE_USER",
                        "parts": [{"text": "snake"}], "metadata": {"agentId": "echo"}},
            "configuration": {"history_length": 0}}
    answer = ok(client.post(f"{REST}/message:send", json=body))
    assert "history" not in answer["task"]
    listed = ok(client.get(f"{REST}/tasks", params={"context_id": answer["task"]["contextId"],
                                                    "page_size": 1}))
    assert [t["id"] for t in listed["tasks"]] == [answer["task"]["id"]]


def test_invalid_params_are_400_with_a_bad_request(client: httpx.Client) -> None:
    for response, field in (
        (client.get(f"{REST}/tasks", params={"pageSize": "many"}), "pageSize"),
        (client.get(f"{REST}/tasks", params={"pageSize": 500}), "pageSize"),
        (client.get(f"{REST}/tasks", params={"colour": "red"}), "colour"),
        (client.get(f"{REST}/tasks?pageSize=1&pageSize=2"), "pageSize"),
        (client.post(f"{REST}/message:send", json={"message": v1_message("x"),
                                                   "method": "SendMessage"}), "method"),
        (client.post(f"{REST}/message:send", json={}), "message"),
    ):
        error = status_error(response, 400, "INVALID_PARAMS")
        assert error["status"] == "INVALID_ARGUMENT"
        fields = [v["field"] for v in error["details"][1]["fieldViolations"]]
        assert field in fields, (field, error)
    unparsable = client.post(f"{REST}/message:send", content=b"{nope",
                             headers={"Content-Type": "application/json"})
    status_error(unparsable, 400, "PARSE_ERROR")


# -- the gates ------------------------------------------------------------------------------


def test_the_gates_refuse_as_on_json_rpc_in_the_bindings_shape(
    node: LiveNode, client: httpx.Client
) -> None:
    with httpx.Client(base_url=node.url) as anon:
        status_error(anon.get(f"{REST}/tasks"), 401, "UNAUTHENTICATED")
    with node.client(UNLISTED, UNLISTED_KEY) as unlisted:
        status_error(unlisted.get(f"{REST}/tasks"), 403, "PEER_NOT_ALLOWED")
    with node.client(PEER, "not-the-key") as wrong:
        status_error(wrong.post(f"{REST}/message:send", json={}), 401, "UNAUTHENTICATED")
    plain = client.post(f"{REST}/message:send", content=b"{}",
                        headers={"Content-Type": "text/plain"})
    status_error(plain, 415, "CONTENT_TYPE_NOT_SUPPORTED")
    typed = client.post(f"{REST}/message:send", json={"message": v1_message("typed")},
                        headers={"Content-Type": "application/a2a+json"})
    assert ok(typed)["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    big = client.post(f"{REST}/message:send", content=b" " * (LIMIT + 1),
                      headers={"Content-Type": "application/json"})
    status_error(big, 413, "INVALID_REQUEST")
    wrong_method = client.put(f"{REST}/tasks/x")
    status_error(wrong_method, 405, "INVALID_REQUEST")
    assert wrong_method.headers["allow"] == "GET"
    status_error(client.get(f"{REST}/nothing/here"), 404, "METHOD_NOT_FOUND")
    # The binding serves 1.0: with or without the header, any other version is refused.
    assert ok(client.get(f"{REST}/tasks", headers={"A2A-Version": "1.0"}))["tasks"] is not None
    for version in ("0.3", "9.9", "one"):
        refused = client.get(f"{REST}/tasks", headers={"A2A-Version": version})
        assert status_error(refused, 400, "VERSION_NOT_SUPPORTED")["status"] == (
            "FAILED_PRECONDITION")
    # An optional body without a Content-Type must be empty.
    status_error(client.post(f"{REST}/tasks/x:cancel", content=b'{"metadata": {}}'), 415,
                 "CONTENT_TYPE_NOT_SUPPORTED")


def test_requests_are_logged_and_counted_like_json_rpc_ones(
    node: LiveNode, client: httpx.Client
) -> None:
    task = send(client, "logged")
    node.wait_for_event("a2a.inbound.received", method="SendMessage", peer_name=PEER)
    ok(client.get(f"{REST}/tasks/{task['id']}"))
    node.wait_for_event("a2a.inbound.received", method="GetTask", peer_name=PEER)
    node.wait_for_event("a2a.inbound.completed", operation="gateway.rest.get_task",
                        method="GetTask", status=200, peer_name=PEER)
    with httpx.Client(base_url=node.url) as admin:
        scraped = admin.get("/metrics", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert scraped.status_code == 200
    # Counted as 1.0 by its route, though it carried no A2A-Version.
    assert ('synthorg_requests_total{dialect="1.0",method="GetTask",'
            'operation="gateway.rest.get_task",status="200"}') in scraped.text


# -- streams --------------------------------------------------------------------------------


def test_message_stream_sends_each_stream_response_bare(client: httpx.Client) -> None:
    body = {"message": v1_message("hi", "quick")}
    with client.stream("POST", f"{REST}/message:stream", json=body) as response:
        events = list(sse(response))
    first = events[0].body
    assert set(first) == {"task"}
    for event in events[1:]:
        (kind,) = event.body
        assert kind in {"statusUpdate", "artifactUpdate"}, event.body
    ids = [e.id for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    last = events[-1].body["statusUpdate"]
    assert last["status"]["state"] == "TASK_STATE_COMPLETED"
    chunks = [e.body["artifactUpdate"]["artifact"]["parts"][0]["text"] for e in events
              if "artifactUpdate" in e.body]
    assert chunks == [f"[{n}] hi\n" for n in range(1, 4)]
    task_id = first["task"]["id"]
    assert ok(client.get(f"{REST}/tasks/{task_id}")) == rpc(client, "GetTask", {"id": task_id})


def test_subscribe_resumes_after_last_event_id_exactly(client: httpx.Client) -> None:
    body = {"message": v1_message("long", "slow")}
    with client.stream("POST", f"{REST}/message:stream", json=body) as response:
        seen = sse(response)
        first_three = [next(seen), next(seen), next(seen)]
    task_id = first_three[0].body["task"]["id"]
    for method in ("GET", "POST"):
        with client.stream(method, f"{REST}/tasks/{task_id}:subscribe",
                           headers={"Last-Event-ID": str(first_three[1].id)}) as response:
            replay = sse(response)
            again = next(replay)
            assert again.id == first_three[2].id and again.body == first_three[2].body
    # The same log, read by JSON-RPC: the same event at the same id.
    rpc_frames = client.stream(
        "POST", "/api/v1/a2a/", json=envelope("SubscribeToTask", {"id": task_id}),
        headers={**V1, "Last-Event-ID": str(first_three[1].id)},
    )
    with rpc_frames as response:
        again = next(sse(response))
        assert again.id == first_three[2].id and again.body["result"] == first_three[2].body
    with client.stream("GET", f"{REST}/tasks/{task_id}:subscribe") as response:
        live = sse(response)
        assert set(next(live).body) == {"task"}  # from the task as it is
        ok(client.post(f"{REST}/tasks/{task_id}:cancel"))
        rest = list(live)
    assert rest[-1].body["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"


def test_subscribing_to_a_final_task_is_400_unsupported_operation(client: httpx.Client) -> None:
    task = send(client)
    response = client.get(f"{REST}/tasks/{task['id']}:subscribe")
    error = status_error(response, 400, "UNSUPPORTED_OPERATION")
    assert error["details"] == rpc_error(client, "SubscribeToTask", {"id": task["id"]})["data"]


def test_the_openapi_document_declares_every_route(node: LiveNode) -> None:
    with httpx.Client(base_url=node.url) as anon:
        document = json.loads(anon.get("/openapi.json").content)
    served = {(method.upper(), path) for path, item in document["paths"].items()
              for method in item if path.startswith(PREFIX)}
    assert ("POST", f"{REST}/message:send") in served
    assert ("GET", f"{REST}/tasks/{{id}}:subscribe") in served
    assert len(served) == 12
    agents = {(m, p) for path, item in document["paths"].items() for m in item
              if (p := path).startswith("/api/v1/a2a/agents/{agent_id}/rest/")}
    assert len(agents) == 12


# -- an agent's routes ----------------------------------------------------------------------


def test_an_agents_routes_send_to_that_agent(client: httpx.Client) -> None:
    agent_base = "/api/v1/a2a/agents/parker/rest"
    msg = {"messageId": unique(), "role": "ROLE_USER", "parts": [{"text": "to parker"}]}
    task = ok(client.post(f"{agent_base}/message:send", json={"message": msg}))["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"  # the park agent's answer
    assert ok(client.get(f"{agent_base}/tasks/{task['id']}")) == ok(
        client.get(f"{REST}/tasks/{task['id']}"))
    canceled = ok(client.post(f"{agent_base}/tasks/{task['id']}:cancel"))
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    for response in (client.get("/api/v1/a2a/agents/nobody/rest/tasks"),
                     client.post("/api/v1/a2a/agents/nobody/rest/message:send",
                                 json={"message": msg}),
                     client.get("/api/v1/a2a/agents/Not..Valid/rest/tasks")):
        status_error(response, 404, "UNKNOWN_AGENT")
