"""The A2A 1.0 dialect on the same endpoint as 0.3, over real HTTP against a live node:
routing by A2A-Version and method name, the protobuf JSON mapping, one task seen from both
dialects, ListTasks paging and ownership, and the same refusals as 0.3."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from synthorg.cards.validation import spec_issues
from tests.integration.helpers import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    cancel_task,
    envelope,
    expect_error,
    expect_result,
    get_task,
    park_task,
    unique,
)

Json = dict[str, Any]
V1 = {"A2A-Version": "1.0"}
VERSION_NOT_SUPPORTED = -32009
RPC = "/api/v1/a2a/"


def v1_call(
    client: httpx.Client, method: str, params: Json, request_id: int = 1, version: str = "1.0"
) -> httpx.Response:
    headers = {"A2A-Version": version} if version else {}
    return client.post(RPC, json=envelope(method, params, request_id), headers=headers)


def v1_message(text: str, agent_id: str = "echo", **extra: Any) -> Json:
    return {
        "messageId": unique(),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        "metadata": {"agentId": agent_id},
        **extra,
    }


def v1_send(client: httpx.Client, msg: Json, version: str = "1.0") -> Json:
    result = expect_result(v1_call(client, "SendMessage", {"message": msg}, version=version))
    assert set(result) == {"task"}
    return dict(result["task"])


def test_send_message_answers_a_wrapped_task_in_the_protobuf_json_mapping(
    client_a: httpx.Client,
) -> None:
    task = v1_send(client_a, v1_message("hello"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "kind" not in task
    roles = [m["role"] for m in task["history"]]
    assert roles[0] == "ROLE_USER" and set(roles) <= {"ROLE_USER", "ROLE_AGENT"}
    for msg in task["history"]:
        assert "kind" not in msg
        assert all("kind" not in part for part in msg["parts"])


def test_a_1_0_method_without_the_header_is_routed_by_its_name(client_a: httpx.Client) -> None:
    task = v1_send(client_a, v1_message("no header"), version="")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


def test_unsupported_version_is_refused_with_32009(client_a: httpx.Client) -> None:
    for version in ("0.2", "2.0", "one"):
        response = v1_call(client_a, "GetTask", {"id": "x"}, request_id=7, version=version)
        expect_error(response, code=VERSION_NOT_SUPPORTED, request_id=7)


@pytest.mark.parametrize("version", [
    "1.00", "01.0", "1.0.", "1.0.01", "+1.0", "1 .0",
    "\u0661.\u0660",  # Arabic-Indic digits
    "\uff11.\uff10",  # fullwidth digits
    "\u00b9.\u2070",  # superscripts
])
def test_a_value_that_is_not_a_version_in_ascii_digits_is_refused_with_32009(
    client_a: httpx.Client, version: str
) -> None:
    response = client_a.post(RPC, json=envelope("GetTask", {"id": "x"}, 7),
                             headers={"A2A-Version": version.encode()})
    expect_error(response, code=VERSION_NOT_SUPPORTED, request_id=7)


@pytest.mark.parametrize("version", ["1.0", "1.0.2", "0.3"])
def test_the_documented_version_forms_are_served(client_a: httpx.Client, version: str) -> None:
    method = "GetTask" if version.strip().startswith("1") else "tasks/get"
    response = v1_call(client_a, method, {"id": "no-such-task"}, request_id=7, version=version)
    expect_error(response, code=TASK_NOT_FOUND, request_id=7)


def test_each_version_serves_its_own_methods_only(client_a: httpx.Client) -> None:
    get_03, get_10 = ("tasks/get", {"id": "x"}), ("GetTask", {"id": "x"})
    expect_error(v1_call(client_a, *get_03), code=METHOD_NOT_FOUND, request_id=1)
    expect_error(v1_call(client_a, *get_10, version="0.3"), code=METHOD_NOT_FOUND, request_id=1)
    expect_error(v1_call(client_a, *get_03, version="0.3"), code=TASK_NOT_FOUND, request_id=1)


def test_a_task_created_in_0_3_reads_and_cancels_the_same_in_1_0(client_a: httpx.Client) -> None:
    task = park_task(client_a)
    got = expect_result(v1_call(client_a, "GetTask", {"id": task["id"]}))
    assert got["id"] == task["id"] and got["contextId"] == task["contextId"]
    assert got["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert [m["messageId"] for m in got["history"]] == [m["messageId"] for m in task["history"]]
    canceled = expect_result(v1_call(client_a, "CancelTask", {"id": task["id"]}))
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert expect_result(get_task(client_a, task["id"]))["status"]["state"] == "canceled"
    again = v1_call(client_a, "CancelTask", {"id": task["id"]})
    expect_error(again, code=TASK_NOT_CANCELABLE, request_id=1)


def test_a_task_created_in_1_0_reads_and_cancels_the_same_in_0_3(client_a: httpx.Client) -> None:
    raw = base64.b64encode(b"file body").decode()
    msg = v1_message("park", agent_id="parker")
    msg["parts"] += [
        {"raw": raw, "mediaType": "text/plain", "filename": "a.txt"},
        {"data": {"k": [1, 2]}},
    ]
    task = v1_send(client_a, msg)
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert task["history"][0]["parts"][1:] == msg["parts"][1:]
    old = expect_result(get_task(client_a, task["id"]))
    assert old["kind"] == "task" and old["status"]["state"] == "input-required"
    assert old["history"][0]["parts"][1] == {
        "kind": "file",
        "file": {"bytes": raw, "mimeType": "text/plain", "name": "a.txt"},
    }
    assert expect_result(cancel_task(client_a, task["id"]))["status"]["state"] == "canceled"
    again = expect_result(v1_call(client_a, "GetTask", {"id": task["id"], "historyLength": 0}))
    assert again["status"]["state"] == "TASK_STATE_CANCELED" and "history" not in again


def test_another_peers_task_is_not_found_in_1_0(
    client_a: httpx.Client, client_b: httpx.Client
) -> None:
    task = v1_send(client_a, v1_message("mine"))
    for method in ("GetTask", "CancelTask"):
        answer = v1_call(client_b, method, {"id": task["id"]})
        expect_error(answer, code=TASK_NOT_FOUND, request_id=1)


def test_same_message_id_is_the_same_task_in_both_dialects(client_a: httpx.Client) -> None:
    msg = v1_message("once")
    first = v1_send(client_a, msg)
    assert v1_send(client_a, msg)["id"] == first["id"]


ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def test_1_0_errors_carry_an_error_info_array_and_0_3_errors_do_not(
    client_a: httpx.Client,
) -> None:
    missing = {"id": "no-such-task-errinfo"}
    error = expect_error(v1_call(client_a, "GetTask", missing), code=TASK_NOT_FOUND, request_id=1)
    assert error["data"] == [
        {"@type": ERROR_INFO, "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}
    ]
    assert spec_issues({"jsonrpc": "2.0", "id": 1, "error": error}, "JsonRpcErrorResponse") == []
    # The same method name routed without the header is still the 1.0 dialect.
    bare = expect_error(v1_call(client_a, "GetTask", missing, version=""), code=TASK_NOT_FOUND,
                        request_id=1)
    assert bare["data"][0]["reason"] == "TASK_NOT_FOUND"
    old = expect_error(get_task(client_a, "no-such-task-errinfo"), code=TASK_NOT_FOUND,
                       request_id=1)
    assert "data" not in old or isinstance(old["data"], dict)


@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", ""])
def test_a_1_0_request_with_a_wrong_content_type_gets_1_0s_code(
    client_a: httpx.Client, content_type: str
) -> None:
    body = json.dumps(envelope("SendMessage", {"message": v1_message("ct")}, 1)).encode()
    headers = {"Content-Type": content_type, "A2A-Version": "1.0"}
    response = client_a.post(RPC, content=body, headers=headers)
    error = expect_error(response, code=-32005, status=415)
    assert error["data"] == [{"@type": ERROR_INFO, "reason": "CONTENT_TYPE_NOT_SUPPORTED",
                              "domain": "a2a-protocol.org"}]
    # 0.3, or no version: -32600 as before
    for version in ("0.3", None):
        headers = {"Content-Type": content_type, **({"A2A-Version": version} if version else {})}
        old = client_a.post(RPC, content=body, headers=headers)
        assert "data" not in expect_error(old, code=INVALID_REQUEST, status=415)


def test_1_0_invalid_params_list_their_issues_as_field_violations(
    client_a: httpx.Client,
) -> None:
    bad = {"message": {"messageId": "m", "role": "user", "parts": [{"text": "x"}]}}
    error = expect_error(v1_call(client_a, "SendMessage", bad), code=INVALID_PARAMS, request_id=1)
    info, violations = error["data"]
    assert (info["@type"], info["reason"], info["domain"]) == (
        ERROR_INFO, "INVALID_PARAMS", "synthorg")
    assert violations["@type"] == "type.googleapis.com/google.rpc.BadRequest"
    assert any(v["field"].startswith("message.role") for v in violations["fieldViolations"])
    assert spec_issues({"jsonrpc": "2.0", "id": 1, "error": error}, "JsonRpcErrorResponse") == []
    unknown = expect_error(v1_call(client_a, "NoSuchMethod", {}), code=METHOD_NOT_FOUND,
                           request_id=1)
    assert unknown["data"][0]["reason"] == "METHOD_NOT_FOUND"


@pytest.mark.parametrize(
    "params",
    [
        {"message": {"messageId": "m", "role": "user", "parts": [{"text": "x"}]}},
        {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"kind": "text"}]}},
        {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"url": "file:///etc"}]}},
        {"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}},
    ],
    ids=["0.3-role", "0.3-kind", "file-url", "no-parts"],
)
def test_bad_1_0_params_are_invalid_params(client_a: httpx.Client, params: Json) -> None:
    expect_error(v1_call(client_a, "SendMessage", params), code=INVALID_PARAMS, request_id=1)


def test_list_tasks_pages_the_callers_own_tasks_newest_first(
    client_a: httpx.Client, client_b: httpx.Client
) -> None:
    context = unique("ctx")
    made = [v1_send(client_b, v1_message(f"t{i}", contextId=context))["id"] for i in range(5)]
    v1_send(client_a, v1_message("not b's", contextId=context))
    seen: list[str] = []
    token = ""
    while True:
        params: Json = {"contextId": context, "pageSize": 2, "historyLength": 1}
        if token:
            params["pageToken"] = token
        page = expect_result(v1_call(client_b, "ListTasks", params))
        assert page["pageSize"] == 2 and page["totalSize"] == 5
        assert all(len(task["history"]) <= 1 for task in page["tasks"])
        seen += [task["id"] for task in page["tasks"]]
        token = page["nextPageToken"]
        if not token:
            break
    assert seen == made[::-1]


def test_list_tasks_filters_by_status(client_b: httpx.Client) -> None:
    context = unique("ctx")
    v1_send(client_b, v1_message("done", contextId=context))
    v1_send(client_b, v1_message("wait", agent_id="parker", contextId=context))
    params = {"contextId": context, "status": "TASK_STATE_INPUT_REQUIRED"}
    page = expect_result(v1_call(client_b, "ListTasks", params))
    assert [t["status"]["state"] for t in page["tasks"]] == ["TASK_STATE_INPUT_REQUIRED"]
    assert page["nextPageToken"] == ""


@pytest.mark.parametrize(
    "params",
    [{"pageSize": 0}, {"pageSize": 101}, {"pageToken": "not-a-token"}, {"status": "working"}],
    ids=["page-size-0", "page-size-101", "foreign-token", "0.3-state"],
)
def test_bad_list_params_are_invalid_params(client_a: httpx.Client, params: Json) -> None:
    expect_error(v1_call(client_a, "ListTasks", params), code=INVALID_PARAMS, request_id=1)


# -- streams in 1.0 ---------------------------------------------------------------------------


def v1_stream(client: httpx.Client, method: str, params: Json) -> list[Json]:
    """The results of a 1.0 stream's events, in order."""
    body = envelope(method, params)
    with client.stream("POST", RPC, json=body, headers=V1) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in answer.iter_lines() if line.startswith("data:")]
    return [json.loads(line[len("data:"):])["result"] for line in lines]


def test_send_streaming_message_streams_1_0_events(client_a: httpx.Client) -> None:
    events = v1_stream(client_a, "SendStreamingMessage", {"message": v1_message("stream me")})
    assert events and all(len(event) == 1 for event in events)
    kinds = [next(iter(event)) for event in events]
    assert set(kinds) <= {"task", "message", "statusUpdate", "artifactUpdate"}
    last = events[-1]
    state = (last.get("statusUpdate") or last.get("task"))["status"]["state"]
    assert state == "TASK_STATE_COMPLETED"
    for event in events:
        assert "kind" not in json.dumps(event)


def test_subscribe_to_task_follows_a_task_in_1_0(client_a: httpx.Client) -> None:
    task = v1_send(client_a, v1_message("park", agent_id="parker"))
    events = v1_stream(client_a, "SubscribeToTask", {"id": task["id"]})
    assert events[0]["task"]["id"] == task["id"]
    assert events[0]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


def stream_data(client: httpx.Client, method: str, params: Json,
                headers: dict[str, str]) -> list[Json]:
    """The JSON of each event of a stream (results or errors), in order."""
    with client.stream("POST", RPC, json=envelope(method, params), headers=headers) as answer:
        assert answer.status_code == 200
        lines = [line for line in answer.iter_lines() if line.startswith("data:")]
    return [json.loads(line[len("data:"):]) for line in lines]


def test_subscribe_at_or_past_the_end_of_the_log_answers_at_once_in_1_0(
    client_a: httpx.Client,
) -> None:
    # a follower whose stream dropped resumes: a task that ends streams is its last event
    for text, agent, state in (("done", "echo", "TASK_STATE_COMPLETED"),
                               ("wait", "parker", "TASK_STATE_INPUT_REQUIRED")):
        task = v1_send(client_a, v1_message(text, agent_id=agent))
        logged = stream_data(client_a, "SubscribeToTask", {"id": task["id"]},
                             {**V1, "Last-Event-ID": "0"})
        assert logged
        for last in (str(10**18 - 1), "5000000"):
            [event] = stream_data(client_a, "SubscribeToTask", {"id": task["id"]},
                                  {**V1, "Last-Event-ID": last})
            assert event["result"]["task"]["status"]["state"] == state


def refusal_code(answer: httpx.Response) -> int:
    """The JSON-RPC error code of a refusal answered as JSON or as a stream's one event."""
    assert answer.status_code == 200
    text = answer.text
    if answer.headers["content-type"].startswith("text/event-stream"):
        [text] = [line[len("data:"):] for line in text.splitlines() if line.startswith("data:")]
    return int(json.loads(text)["error"]["code"])


@pytest.mark.parametrize("last", [
    b"9" * 5000, "\u00b2".encode(), "\u0661".encode(), b"-1", b"+1", b"1_0",
    b"99999999999999999999",  # past the largest event id
])
@pytest.mark.parametrize("method,version", [
    ("SubscribeToTask", "1.0"), ("tasks/resubscribe", "0.3"),
])
def test_a_last_event_id_that_is_not_an_event_id_is_invalid_params(
    client_a: httpx.Client, last: bytes, method: str, version: str
) -> None:
    task = v1_send(client_a, v1_message("hi"))
    answer = client_a.post(RPC, json=envelope(method, {"id": task["id"]}),
                           headers={"A2A-Version": version, "Last-Event-ID": last})
    assert refusal_code(answer) == -32602


def test_a_body_with_a_5000_digit_number_says_so(client_a: httpx.Client) -> None:
    body = b'{"jsonrpc": "2.0", "id": ' + b"7" * 5000 + b', "method": "GetTask"}'
    answer = client_a.post(RPC, content=body, headers={"Content-Type": "application/json",
                                                       "A2A-Version": "1.0"})
    error = answer.json()["error"]
    assert error["code"] == -32700 and "more than 4300 digits" in error["message"]


def test_subscribe_to_a_final_task_is_unsupported_in_1_0_only(client_a: httpx.Client) -> None:
    task = v1_send(client_a, v1_message("done"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    # refused before any event: a plain JSON-RPC answer, not a stream
    answer = client_a.post(RPC, json=envelope("SubscribeToTask", {"id": task["id"]}),
                           headers=V1)
    assert answer.headers["content-type"].startswith("application/json")
    refusal = expect_error(answer, code=-32004, request_id=1)
    assert refusal["data"][0]["reason"] == "UNSUPPORTED_OPERATION"
    missing = client_a.post(RPC, json=envelope("SubscribeToTask", {"id": "no-such-task"}),
                            headers=V1)
    expect_error(missing, code=TASK_NOT_FOUND, request_id=1)
    refusal = {"error": refusal}
    assert refusal["error"]["data"][0]["reason"] == "UNSUPPORTED_OPERATION"
    assert refusal["error"]["data"][0]["domain"] == "a2a-protocol.org"
    # 0.3's tasks/resubscribe still answers the final task and ends
    old = stream_data(client_a, "tasks/resubscribe", {"id": task["id"]}, {})
    assert old[-1]["result"]["status"]["state"] == "completed"
    # a resumed 1.0 stream (Last-Event-ID) still gets the events after it
    resumed = stream_data(client_a, "SubscribeToTask", {"id": task["id"]},
                          {**V1, "Last-Event-ID": "0"})
    assert resumed and all("result" in event for event in resumed)


# -- historyLength on SendMessage ------------------------------------------------------------


@pytest.mark.parametrize("member", ["historyLength", "history_length"])
def test_send_message_history_length_cuts_the_answer_as_get_task_does(
    client_a: httpx.Client, member: str
) -> None:
    """Each follow-up of a parked task adds two messages; the answer to each keeps its
    historyLength's most recent (0: none, the member omitted), as GetTask answers them."""
    task = v1_send(client_a, v1_message("park", agent_id="parker"))
    for turn, length in enumerate((1, 3, 0, 50), start=2):
        follow_up = v1_message("more", agent_id="parker", taskId=task["id"])
        answer = expect_result(v1_call(client_a, "SendMessage", {
            "message": follow_up, "configuration": {member: length}}))["task"]
        full = expect_result(v1_call(client_a, "GetTask", {"id": task["id"]}))["history"]
        assert len(full) == 2 * turn
        assert answer.get("history", []) == (full[-length:] if length else [])
        assert ("history" in answer) == (length > 0)
        assert answer == expect_result(
            v1_call(client_a, "GetTask", {"id": task["id"], "historyLength": length}))
    whole = v1_send(client_a, v1_message("more", agent_id="parker", taskId=task["id"]))
    assert len(whole["history"]) == 2 * (turn + 1)  # absent: the whole history


def test_send_streaming_message_history_length_cuts_the_streamed_task(
    client_a: httpx.Client,
) -> None:
    task = v1_send(client_a, v1_message("park", agent_id="parker"))
    follow_up = v1_message("more", agent_id="parker", taskId=task["id"])
    events = v1_stream(client_a, "SendStreamingMessage", {
        "message": follow_up, "configuration": {"historyLength": 1}})
    tasks = [event["task"] for event in events if "task" in event]
    assert tasks and all(len(t["history"]) == 1 for t in tasks)
    full = expect_result(v1_call(client_a, "GetTask", {"id": task["id"]}))["history"]
    assert len(full) == 4 and tasks[0]["history"] == full[-1:]


@pytest.mark.parametrize("length", [-1, 2**31])
def test_send_message_history_length_out_of_bounds_is_invalid_params(
    client_a: httpx.Client, length: int
) -> None:
    answer = v1_call(client_a, "SendMessage", {
        "message": v1_message("x"), "configuration": {"historyLength": length}})
    expect_error(answer, code=INVALID_PARAMS, request_id=1)
