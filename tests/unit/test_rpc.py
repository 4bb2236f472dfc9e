"""`pipeline.answer` in process against a real node (SQLite store, real executors): DESIGN §4
steps 8-12 — parse, envelope, id rules, method, params, handler errors and internal faults.

Every envelope it answers must also conform to the spec's JsonRpcResponse schema.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from synthorg.contract.spec import bundled_openapi
from synthorg.gateway import pipeline
from synthorg.gateway.context import Services
from synthorg.gateway.pipeline import MAX_DEPTH
from synthorg.generated.models import Message, Task, V1Message, V1Task
from synthorg.node import Node
from synthorg.observability.events import a2a as events
from synthorg.observability.log import LOGGER_NAME
from synthorg.store.sqlite.database import DB_FILENAME
from synthorg.tasks.executors import Outcome, Progress
from synthorg.tasks.service import AgentRuntime, TaskService
from tests.support.codes import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MESSAGE_ID_CONFLICT,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    TASK_TERMINAL,
    UNKNOWN_AGENT,
)

PEER = "peer-a"
OTHER_PEER = "peer-b"
CONFIG = """\
agents:
  - id: echo
    name: Echo
    executor: {kind: echo}
  - id: parker
    name: Parker
    executor: {kind: park}
a2a:
  enabled: true
  allowed_peers: [peer-a, peer-b]
  max_message_parts: 3
"""
MAX_SAFE = 2**53 - 1

_COMPONENTS = bundled_openapi()["components"]
RESPONSE_SCHEMA = Draft202012Validator(
    {"$ref": "#/components/schemas/JsonRpcResponse", "components": _COMPONENTS}
)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    (tmp_path / "config.yaml").write_text(CONFIG)
    built = Node.build(tmp_path)
    asyncio.run(built.recover())
    yield built
    built.close()


def rpc(node: Node, body: bytes | str | Any, peer: str = PEER) -> tuple[int, dict[str, Any]]:
    """One call through steps 8-12; the answer must be a spec-conformant, strict-JSON envelope."""
    if isinstance(body, str):
        raw = body.encode("utf-8")
    elif isinstance(body, bytes):
        raw = body
    else:
        raw = json.dumps(body).encode("utf-8")
    services = Services(node.tasks, node.skills, node.push)
    status, answer = asyncio.run(pipeline.answer(raw, peer, None, services))
    envelope = json.loads(answer, parse_constant=_not_json)  # the wire carries strict JSON
    errors = sorted(RESPONSE_SCHEMA.iter_errors(envelope), key=str)
    assert not errors, f"{envelope} does not conform: {errors[0].message}"
    return status, envelope


def _not_json(name: str) -> None:
    raise AssertionError(f"{name} is not JSON")


def call(method: str, params: Any, request_id: str | int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def message(message_id: str = "m-1", text: str = "hello", **extra: Any) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": message_id,
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        **extra,
    }


def error_of(response: tuple[int, dict[str, Any]]) -> tuple[int, int, Any]:
    """(HTTP status, JSON-RPC code, id) of an error answer."""
    status, envelope = response
    assert "result" not in envelope
    return status, envelope["error"]["code"], envelope["id"]


def send(node: Node, msg: dict[str, Any], peer: str = PEER) -> dict[str, Any]:
    status, envelope = rpc(node, call("message/send", {"message": msg}), peer)
    assert status == 200 and "result" in envelope, envelope
    result: dict[str, Any] = envelope["result"]
    return result


# -- step 8: parse --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"   ",
        b"{",
        b'{"jsonrpc": "2.0",}',
        b"\xff\xfe{}",  # not UTF-8
        '{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"caf\u00e9"}}'.encode(
            "latin-1"
        ),
        b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":NaN}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":Infinity}}',
        # a lone surrogate escape, in a value and in a key
        b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"\\ud800"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"\\udfff":"x"}}',
        b"\xef\xbb\xbf{}",  # a UTF-8 byte-order mark is not JSON
    ],
    ids=[
        "empty",
        "blank",
        "truncated",
        "trailing-comma",
        "utf16",
        "latin1",
        "nan",
        "infinity",
        "lone-surrogate-value",
        "lone-surrogate-key",
        "bom",
    ],
)
def test_unparseable_body_is_a_parse_error_with_null_id(node: Node, body: bytes) -> None:
    assert error_of(rpc(node, body)) == (200, PARSE_ERROR, None)


def test_nesting_deeper_than_the_limit_is_an_invalid_request(node: Node) -> None:
    deep: Any = "x"
    for _ in range(MAX_DEPTH + 1):
        deep = {"k": deep}
    body = call("message/send", {"message": message(metadata=deep)})
    assert error_of(rpc(node, body)) == (200, INVALID_REQUEST, None)


def test_pathologically_deep_nesting_does_not_blow_the_stack(node: Node) -> None:
    body = "[" * 100_000 + "]" * 100_000
    assert error_of(rpc(node, body)) == (200, INVALID_REQUEST, None)


def test_nesting_at_the_limit_passes_the_parser_to_meet_the_spec_bound(node: Node) -> None:
    """The parser's bound (MAX_DEPTH) is a backstop for every body; the spec's own bounds on
    free-form values (four levels of metadata) are tighter and answer -32602."""
    deep: Any = "x"
    for _ in range(MAX_DEPTH - 5):  # envelope, params, message, metadata add four levels
        deep = {"k": deep}
    found = issues(rpc(node, call("message/send", {"message": message(metadata=deep)})))
    assert [(issue["loc"], issue["type"]) for issue in found] == [
        (["message", "metadata", "*", "object", "*", "object", "*"], "json_type_not_allowed")
    ]


def test_metadata_at_the_spec_depth_bound_is_accepted(node: Node) -> None:
    task = send(node, message(metadata={"k": {"k": {"k": "x"}}}))
    assert task["status"]["state"] == "completed"
    assert task["history"][0]["metadata"] == {"k": {"k": {"k": "x"}}}


def test_number_beyond_double_range_never_yields_non_json(node: Node) -> None:
    body = json.dumps(call("message/send", {"message": message()}))
    body = body.replace('"role"', '"metadata": {"big": 1e999}, "role"')
    status, _ = rpc(node, body)  # rpc() asserts the answer is strict JSON
    assert status == 200


# -- step 9: envelope and id rules ---------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        [call("tasks/get", {"id": "t"})],  # a batch
        [],
        "just a string",
        42,
        None,
        True,
    ],
    ids=["batch", "empty-batch", "string", "number", "null", "bool"],
)
def test_non_object_body_is_an_invalid_request_with_null_id(node: Node, body: Any) -> None:
    assert error_of(rpc(node, json.dumps(body))) == (200, INVALID_REQUEST, None)


@pytest.mark.parametrize(
    "request_id",
    [1.5, True, None, [], {}, MAX_SAFE + 1, -MAX_SAFE - 1, "x" * 129],
    ids=[
        "float",
        "bool",
        "null",
        "list",
        "object",
        "above-safe",
        "below-safe",
        "string-129",
    ],
)
def test_invalid_id_is_an_invalid_request_with_null_id(node: Node, request_id: Any) -> None:
    body = call("tasks/get", {"id": "t"}, request_id)
    assert error_of(rpc(node, body)) == (200, INVALID_REQUEST, None)


def test_integral_float_id_is_an_integer_as_json_schema_counts_it(node: Node) -> None:
    body = call("tasks/get", {"id": "t"}, 1.0)
    assert error_of(rpc(node, body)) == (200, TASK_NOT_FOUND, 1)


def test_missing_id_is_answered_with_null_id_after_the_method_checks(node: Node) -> None:
    body = {"jsonrpc": "2.0", "method": "tasks/get", "params": {"id": "t"}}
    assert error_of(rpc(node, body)) == (200, TASK_NOT_FOUND, None)


def test_missing_id_with_an_unknown_method_is_method_not_found(node: Node) -> None:
    body = {"jsonrpc": "2.0", "method": "tasks/nothing", "params": {}}
    assert error_of(rpc(node, body)) == (200, METHOD_NOT_FOUND, None)


def test_missing_id_with_bad_params_is_invalid_params(node: Node) -> None:
    body = {"jsonrpc": "2.0", "method": "tasks/get", "params": {"historyLength": -1}}
    assert error_of(rpc(node, body)) == (200, INVALID_PARAMS, None)


def test_missing_id_gets_its_result_with_null_id(node: Node) -> None:
    body = {"jsonrpc": "2.0", "method": "message/send", "params": {"message": message("no-id")}}
    status, envelope = rpc(node, body)
    assert (status, envelope["id"], envelope["result"]["kind"]) == (200, None, "task")


def test_large_history_length_is_clamped_not_refused(node: Node) -> None:
    task = send(node, message("m-clamp"))
    status, envelope = rpc(node, call("tasks/get", {"id": task["id"], "historyLength": 10000}))
    assert (status, envelope["result"]["history"]) == (200, task["history"])


@pytest.mark.parametrize(
    "request_id",
    [0, -1, MAX_SAFE, -MAX_SAFE, "", "x" * 128, "\u00e9\U0001f600"],
    ids=["zero", "negative", "max-safe", "min-safe", "empty-string", "string-128", "unicode"],
)
def test_valid_id_is_echoed_exactly(node: Node, request_id: str | int) -> None:
    status, envelope = rpc(node, call("tasks/get", {"id": "missing"}, request_id))
    assert (status, envelope["id"], envelope["error"]["code"]) == (200, request_id, TASK_NOT_FOUND)
    assert type(envelope["id"]) is type(request_id)


@pytest.mark.parametrize(
    "envelope",
    [
        {"id": 7, "method": "tasks/get", "params": {"id": "t"}},
        {"jsonrpc": "1.0", "id": 7, "method": "tasks/get", "params": {"id": "t"}},
        {"jsonrpc": 2.0, "id": 7, "method": "tasks/get", "params": {"id": "t"}},
        {"jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": {"id": "t"}, "extra": 1},
        {"jsonrpc": "2.0", "id": 7, "params": {"id": "t"}},
        {"jsonrpc": "2.0", "id": 7, "method": 5, "params": {"id": "t"}},
        {"jsonrpc": "2.0", "id": 7, "method": None, "params": {"id": "t"}},
    ],
    ids=[
        "no-jsonrpc",
        "jsonrpc-1.0",
        "jsonrpc-number",
        "extra-member",
        "no-method",
        "method-number",
        "method-null",
    ],
)
def test_bad_envelope_is_an_invalid_request_echoing_the_valid_id(
    node: Node, envelope: dict[str, Any]
) -> None:
    assert error_of(rpc(node, envelope)) == (200, INVALID_REQUEST, 7)


@pytest.mark.parametrize("params", [[], ["t"], "t", 1, None, True])
def test_non_object_params_is_invalid_params_echoing_the_id(node: Node, params: Any) -> None:
    assert error_of(rpc(node, call("tasks/get", params, "r-9"))) == (200, INVALID_PARAMS, "r-9")


def test_missing_params_is_validated_as_empty_params(node: Node) -> None:
    status, envelope = rpc(node, {"jsonrpc": "2.0", "id": 3, "method": "tasks/get"})
    assert error_of((status, envelope)) == (200, INVALID_PARAMS, 3)
    assert envelope["error"]["data"]["errors"] == [
        {"loc": ["id"], "msg": "Field required", "type": "missing"}
    ]


# -- step 10: method ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method",
    [
        "tasks/list",
        "Tasks/Get",
        "tasks/get ",
        "",
        "rpc.discover",
        "message/streams",
        "tasks/pushNotification/get",
        "x" * 10_000,
    ],
)
def test_unknown_method_is_method_not_found(node: Node, method: str) -> None:
    status, envelope = rpc(node, call(method, {"id": "t"}, 11))
    assert error_of((status, envelope)) == (200, METHOD_NOT_FOUND, 11)
    assert envelope["error"]["message"] == "Method not found"


def test_params_type_is_checked_by_the_envelope_before_the_method_lookup(node: Node) -> None:
    assert error_of(rpc(node, call("nope/nope", ["not", "an", "object"], 1)))[1] == INVALID_PARAMS
    assert error_of(rpc(node, call("nope/nope", {"junk": True}, 1)))[1] == METHOD_NOT_FOUND


# -- step 11: params -------------------------------------------------------------------------------


def issues(response: tuple[int, dict[str, Any]]) -> list[dict[str, Any]]:
    _, envelope = response
    assert error_of(response)[:2] == (200, INVALID_PARAMS)
    assert envelope["error"]["message"] == "Invalid params"
    found: list[dict[str, Any]] = envelope["error"]["data"]["errors"]
    assert found
    for issue in found:
        assert set(issue) == {"loc", "msg", "type"}
    return found


@pytest.mark.parametrize(
    ("params", "loc", "kind"),
    [
        ({"id": "t", "historyLength": "5"}, ["historyLength"], "int_type"),
        ({"id": "t", "historyLength": 5.5}, ["historyLength"], "int_type"),
        ({"id": "t", "historyLength": -1}, ["historyLength"], "greater_than_equal"),
        ({"id": "t", "historyLength": None}, ["historyLength"], "null_not_allowed"),
        ({"id": "t", "metadata": None}, ["metadata"], "null_not_allowed"),
        ({"id": "t", "bogus": 1}, ["bogus"], "extra_forbidden"),
        ({"id": ""}, ["id"], "string_too_short"),
        ({"id": "-starts-with-dash"}, ["id"], "string_pattern_mismatch"),
        ({"id": "trailing-newline\n"}, ["id"], "string_pattern_mismatch"),
        ({"id": 12}, ["id"], "string_type"),
        ({}, ["id"], "missing"),
    ],
)
def test_invalid_tasks_get_params_are_listed_with_loc_msg_type(
    node: Node, params: dict[str, Any], loc: list[Any], kind: str
) -> None:
    found = issues(rpc(node, call("tasks/get", params)))
    assert [(issue["loc"], issue["type"]) for issue in found] == [(loc, kind)]


def test_nested_params_errors_carry_the_full_location(node: Node) -> None:
    bad = message(parts=[{"kind": "text", "text": "ok"}, {"kind": "text", "text": 5}])
    found = issues(rpc(node, call("message/send", {"message": bad})))
    assert found == [
        {
            "loc": ["message", "parts", 1, "text", "text"],
            "msg": "Input should be a valid string",
            "type": "string_type",
        }
    ]


def test_part_kind_selects_the_variant(node: Node) -> None:
    bad = message(parts=[{"kind": "video", "uri": "x"}])
    found = issues(rpc(node, call("message/send", {"message": bad})))
    assert [issue["type"] for issue in found] == ["union_tag_invalid"]


def test_params_errors_never_echo_the_input(node: Node, caplog: pytest.LogCaptureFixture) -> None:
    marker = "MARKER-\u00e9-7f3a"
    caplog.set_level(logging.INFO, logger=LOGGER_NAME)
    params = {"id": marker, "historyLength": marker, "metadata": marker, "x": marker}
    status, envelope = rpc(node, call("tasks/get", params))
    assert [issue["loc"] for issue in issues((status, envelope))] == [
        ["id"],
        ["historyLength"],
        ["metadata"],
        ["x"],
    ]
    assert marker not in json.dumps(envelope, ensure_ascii=False)
    assert marker not in caplog.text
    assert events.BOUNDARY_VALIDATION_FAILED in caplog.text


def test_free_form_member_names_never_appear_in_the_errors(node: Node) -> None:
    """A metadata or data member name is the caller's input: loc shows `*` in its place, where
    a closed object's unknown member is still named (the issue it reports)."""
    marker = "MARKER-\u00e9-5b1d"
    bad = message(
        parts=[
            {"kind": "data", "data": {marker: {marker: {marker: [{}]}}}},
            {"kind": "text", "text": "t", "metadata": {marker * 40: 1}},
            {"kind": "text", "text": "t", "metadata": {"id": [marker * 1000]}},
        ],
        metadata={"remark": marker * 1000},
        colour=marker,
    )
    status, envelope = rpc(node, call("message/send", {"message": bad, marker: 1}))
    found = issues((status, envelope))
    data = ["message", "parts", 0, "data", "data"]
    part = ["message", "parts"]
    assert sorted((issue["loc"], issue["type"]) for issue in found) == sorted(
        [
            ([*data, "*", "object", "*", "object", "*", "array", 0], "json_type_not_allowed"),
            ([*part, 1, "text", "metadata", "*", "[key]"], "string_too_long"),
            # a member named like a spec property is no caller-chosen text: shown as it is
            ([*part, 2, "text", "metadata", "id", "array", 0, "string"], "string_too_long"),
            (["message", "metadata", "*", "string"], "string_too_long"),
            (["message", "colour"], "extra_forbidden"),
            ([marker], "extra_forbidden"),
        ]
    )
    assert json.dumps(envelope, ensure_ascii=False).count(marker) == 1  # the unknown param


def test_a_body_full_of_bad_free_form_members_gets_a_small_answer(node: Node) -> None:
    """A free-form value stops at its first bad member: one issue each, not one per member
    (a 1 MiB body of bad leaves once answered 250,000 issues, 54 MB, in 4.5 s)."""
    data = {"a": {"b": {"c": [{}] * 8}}, "d": ["x" * 65537] * 3}
    metadata = {f"m{i}": {"n": [[]] * 8} for i in range(64)}
    parts = [{"kind": "data", "data": data, "metadata": metadata}] * 20
    status, envelope = rpc(node, call("message/send", {"message": message(parts=parts)}))
    found = issues((status, envelope))
    assert len(found) == 40  # per part: one for data, one for metadata
    assert len(json.dumps(envelope)) < 12_000


@pytest.mark.parametrize(
    "file",
    [{"bytes": "MARKER-NOT-BASE64"}, {"uri": "javascript:MARKER()"}, {"uri": "file:///MARKER"}],
    ids=["bytes", "javascript-uri", "file-uri"],
)
def test_a_refused_file_part_is_not_echoed(node: Node, file: dict[str, str]) -> None:
    bad = message(parts=[{"kind": "file", "file": file}])
    status, envelope = rpc(node, call("message/send", {"message": bad}))
    assert {"string_pattern_mismatch"} <= {issue["type"] for issue in issues((status, envelope))}
    assert "MARKER" not in json.dumps(envelope)


def test_envelope_method_wins_over_params_method(node: Node) -> None:
    """Seed: envelope tasks/get with params.method message/send is validated as tasks/get;
    the differing params.method is reported too, as the spec's const requires."""
    found = issues(rpc(node, call("tasks/get", {"method": "message/send", "id": "nope"})))
    assert [(i["loc"], i["type"]) for i in found] == [(["method"], "literal_error")]


def test_params_method_equal_to_the_envelope_method_is_accepted(node: Node) -> None:
    body = call("tasks/get", {"method": "tasks/get", "id": "nope"})
    assert error_of(rpc(node, body)) == (200, TASK_NOT_FOUND, 1)


def test_smuggled_params_method_does_not_switch_the_shape(node: Node) -> None:
    body = call("tasks/get", {"method": "message/send", "message": message()})
    found = issues(rpc(node, body))
    assert {(tuple(i["loc"]), i["type"]) for i in found} == {
        (("id",), "missing"),
        (("message",), "extra_forbidden"),
        (("method",), "literal_error"),
    }


# -- step 12: handlers ---------------------------------------------------------------------------


def test_message_send_creates_a_task_and_tasks_get_reads_it(node: Node) -> None:
    task = send(node, message(text="ping"))
    Task.model_validate(task)
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "ping"}]
    assert task["history"][0]["messageId"] == "m-1"
    status, envelope = rpc(node, call("tasks/get", {"id": task["id"]}, "g"))
    assert (status, envelope["id"], envelope["result"]) == (200, "g", task)


def test_tasks_get_history_length_keeps_the_most_recent_messages(node: Node) -> None:
    task = send(node, message(metadata={"agentId": "parker"}))
    assert task["status"]["state"] == "input-required"
    follow_up = message("m-2", "more", taskId=task["id"])
    full_history = send(node, follow_up)["history"]
    assert [m["role"] for m in full_history] == ["user", "agent", "user", "agent"]
    _, envelope = rpc(node, call("tasks/get", {"id": task["id"], "historyLength": 2}))
    assert envelope["result"]["history"] == full_history[-2:]
    _, envelope = rpc(node, call("tasks/get", {"id": task["id"], "historyLength": 0}))
    assert "history" not in envelope["result"]
    _, envelope = rpc(node, call("tasks/get", {"id": task["id"], "historyLength": 1000}))
    assert envelope["result"]["history"] == full_history


def test_message_send_retry_is_idempotent_and_reuse_conflicts(node: Node) -> None:
    first = send(node, message("m-7", "same"))
    assert send(node, message("m-7", "same")) == first
    body = call("message/send", {"message": message("m-7", "different")}, 5)
    assert error_of(rpc(node, body)) == (200, MESSAGE_ID_CONFLICT, 5)


def _digest_03(sent: dict[str, Any]) -> str:
    """The digest a release whose core spoke 0.3 recorded for a message: over its 0.3 form."""
    document = Message.model_validate(sent).model_dump(mode="json", by_alias=True,
                                                       exclude_none=True)
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


@pytest.mark.parametrize("follow_up", [False, True])
def test_a_key_recorded_before_the_core_spoke_1_0_still_recognises_its_retry(
    tmp_path: Path, node: Node, follow_up: bool
) -> None:
    first = send(node, message(metadata={"agentId": "parker"}))
    sent = message("m-upgrade", "same", **({"taskId": first["id"]} if follow_up else {}))
    task = send(node, sent)
    # The key as the release before wrote it: its digest over the message's 0.3 form.
    with sqlite3.connect(tmp_path / DB_FILENAME) as conn:
        changed = conn.execute("UPDATE message_keys SET digest = ? WHERE message_id = ?",
                               (_digest_03(sent), "m-upgrade")).rowcount
    assert changed == 1
    assert send(node, sent)["id"] == task["id"]  # the retry: the same task
    reused = {**sent, "parts": [{"kind": "text", "text": "different"}]}
    body = call("message/send", {"message": reused}, 6)
    assert error_of(rpc(node, body)) == (200, MESSAGE_ID_CONFLICT, 6)


def test_another_peers_task_is_indistinguishable_from_a_missing_one(node: Node) -> None:
    task = send(node, message(metadata={"agentId": "parker"}))
    for method in ("tasks/get", "tasks/cancel"):
        mine_missing = rpc(node, call(method, {"id": "no-such-task"}, 1), OTHER_PEER)
        theirs = rpc(node, call(method, {"id": task["id"]}, 1), OTHER_PEER)
        assert mine_missing == theirs
        assert error_of(theirs) == (200, TASK_NOT_FOUND, 1)


def test_cancel_parks_then_refuses_a_final_task(node: Node) -> None:
    task = send(node, message(metadata={"agentId": "parker"}))
    status, envelope = rpc(node, call("tasks/cancel", {"id": task["id"]}))
    assert (status, envelope["result"]["status"]["state"]) == (200, "canceled")
    assert error_of(rpc(node, call("tasks/cancel", {"id": task["id"]}, 2))) == (
        200,
        TASK_NOT_CANCELABLE,
        2,
    )


def test_continuing_a_final_task_is_refused(node: Node) -> None:
    task = send(node, message())
    body = call("message/send", {"message": message("m-2", taskId=task["id"])}, 3)
    assert error_of(rpc(node, body)) == (200, TASK_TERMINAL, 3)


def test_continuing_a_missing_task_is_task_not_found(node: Node) -> None:
    body = call("message/send", {"message": message("m-2", taskId="no-such-task")}, 3)
    assert error_of(rpc(node, body)) == (200, TASK_NOT_FOUND, 3)


def test_unknown_agent_is_refused(node: Node) -> None:
    body = call("message/send", {"message": message(metadata={"agentId": "ghost"})}, 4)
    assert error_of(rpc(node, body)) == (200, UNKNOWN_AGENT, 4)


def test_more_parts_than_configured_is_invalid_params_with_the_limit(node: Node) -> None:
    parts = [{"kind": "text", "text": str(i)} for i in range(4)]
    status, envelope = rpc(node, call("message/send", {"message": message(parts=parts)}, 6))
    assert error_of((status, envelope)) == (200, INVALID_PARAMS, 6)
    assert envelope["error"]["data"] == {"limit": 3}


def test_agent_role_inbound_message_is_invalid_params(node: Node) -> None:
    body = call("message/send", {"message": {**message(), "role": "agent"}}, 8)
    assert error_of(rpc(node, body)) == (200, INVALID_PARAMS, 8)


def test_skills_query_answers_local_agents(node: Node) -> None:
    status, envelope = rpc(node, call("skills/query", {"skill": "ECHO"}))
    assert (status, envelope["result"]) == (200, {"skill": "ECHO", "agents": [], "peers": []})


def test_skills_negotiate_with_an_unknown_peer_is_not_accepted_and_says_no_more(
    node: Node,
) -> None:
    body = call("skills/negotiate", {"skill": "echo", "peerName": "nobody"}, 9)
    status, envelope = rpc(node, body)
    assert (status, envelope["result"]) == (200, {
        "skill": "echo", "peerName": "nobody", "accepted": False, "url": "",
        "matchedSkills": []})


# -- unexpected faults ----------------------------------------------------------------------------


def test_store_fault_is_a_500_internal_error_without_detail(
    node: Node, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER_NAME)
    node.stores.db.close()  # type: ignore[attr-defined]  # every SQLite call now raises
    status, envelope = rpc(node, call("tasks/get", {"id": "t-1"}, "req-500"))
    assert status == 500
    assert envelope == {
        "jsonrpc": "2.0",
        "id": "req-500",
        "error": {"code": INTERNAL_ERROR, "message": "Internal error"},
    }
    assert events.INTERNAL_ERROR in caplog.text
    assert "ProgrammingError" in caplog.text  # the type is logged ...
    assert "closed database" not in caplog.text  # ... never the exception text


def answer_v1(node: Node, body: bytes) -> tuple[int, dict[str, Any]]:
    """One call sent with A2A-Version: 1.0; its envelope, checked against the spec."""
    services = Services(node.tasks, node.skills, node.push)
    status, raw = asyncio.run(pipeline.answer(body, PEER, None, services, version="1.0"))
    envelope = json.loads(raw)
    assert not list(RESPONSE_SCHEMA.iter_errors(envelope)), envelope
    return status, envelope


def test_a_1_0_callers_internal_error_and_parse_errors_are_in_1_0s_shape(node: Node) -> None:
    status, unparsed = answer_v1(node, b"{not json")
    assert (status, unparsed["error"]["code"]) == (200, PARSE_ERROR)
    assert unparsed["error"]["data"] == [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                          "reason": "PARSE_ERROR", "domain": "synthorg"}]
    node.stores.db.close()  # type: ignore[attr-defined]  # every SQLite call now raises
    status, fault = answer_v1(node, json.dumps(call("GetTask", {"id": "t-1"}, 5)).encode())
    assert status == 500
    assert fault == {"jsonrpc": "2.0", "id": 5, "error": {
        "code": INTERNAL_ERROR, "message": "Internal error",
        "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                  "reason": "INTERNAL_ERROR", "domain": "synthorg"}],
    }}
    # Unversioned, a 1.0 method is answered in 1.0 (its name routes it), a 0.3 one in 0.3.
    services = Services(node.tasks, node.skills, node.push)
    for method, v1 in (("GetTask", True), ("tasks/get", False)):
        body = json.dumps(call(method, {"id": "t-1"}, 6)).encode()
        status, raw = asyncio.run(pipeline.answer(body, PEER, None, services))
        assert status == 500 and ("data" in json.loads(raw)["error"]) is v1


def test_store_fault_on_message_send_is_a_500_too(node: Node) -> None:
    node.stores.db.close()  # type: ignore[attr-defined]
    status, envelope = rpc(node, call("message/send", {"message": message()}, 2))
    assert status == 500
    assert envelope["error"] == {"code": INTERNAL_ERROR, "message": "Internal error"}


class _BrokenExecutor:
    pure = True

    async def run(self, task: V1Task, message: V1Message, progress: Progress) -> Outcome:
        raise RuntimeError("executor exploded: /secret/path")

    async def cancel(self, task: V1Task) -> None:
        return None


def test_executor_fault_fails_the_task_not_the_request(node: Node) -> None:
    node.tasks = TaskService(
        node.task_store, {"echo": AgentRuntime("echo", _BrokenExecutor())}, "echo", lambda: 10
    )
    task = send(node, message())
    assert task["status"]["state"] == "failed"
    assert "exploded" not in json.dumps(task)
