"""DESIGN §4 steps 8-12 against a live node: parse, envelope, method, params, handler fault.

Steps 8-11 are JSON-RPC-level errors: HTTP 200, an error envelope, no `result`, and an `id`
that is echoed only once the envelope has shown a valid one. An unexpected fault in a
handler (step 12) answers 500 with -32603 and no details.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from synthorg.store.sqlite.database import open_database
from tests.integration.conftest import PEER_A
from tests.integration.helpers import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    TASK_NOT_FOUND,
    envelope,
    expect_error,
    expect_result,
    get_task,
    message,
    post_body,
    send,
    unique,
    validation_errors,
)
from tests.integration.live import LiveNode

MARKER = "ZZ-DISTINCTIVE-INPUT-4471"


def post_json(client: httpx.Client, body: Any) -> httpx.Response:
    return post_body(client, json.dumps(body).encode())


def send_raw_message_json(client: httpx.Client, message_json: str) -> httpx.Response:
    """message/send with the message spliced in as raw JSON text (escapes kept as written)."""
    body = '{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":%s}}'
    return post_body(client, (body % message_json).encode())


def text_message_json(text_json: str, extra: str = "") -> str:
    return (
        '{"kind":"message","messageId":"raw-1","role":"user",'
        f'"parts":[{{"kind":"text","text":{text_json}}}]{extra}}}'
    )


# -- step 8: parse -------------------------------------------------------------------------


def test_non_utf8_body_is_parse_error_with_null_id(client_a: httpx.Client) -> None:
    body = '{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"caf\u00e9"}}'
    expect_error(post_body(client_a, body.encode("latin-1")), code=PARSE_ERROR)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"{'jsonrpc': '2.0'}",
        b'{"jsonrpc":"2.0","id":1} trailing',
        b"\xef\xbb\xbf{}",
        b'{"id":1,}',
    ],
    ids=["empty", "truncated", "single-quotes", "trailing-garbage", "utf8-bom", "trailing-comma"],
)
def test_invalid_json_is_parse_error_with_null_id(client_a: httpx.Client, body: bytes) -> None:
    expect_error(post_body(client_a, body), code=PARSE_ERROR)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_json_number_literal_is_parse_error(client_a: httpx.Client, literal: str) -> None:
    body = '{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x","historyLength":%s}}'
    expect_error(post_body(client_a, (body % literal).encode()), code=PARSE_ERROR)


def test_lone_surrogate_escape_in_text_part_is_parse_error_not_500(
    client_a: httpx.Client,
) -> None:
    expect_error(send_raw_message_json(client_a, text_message_json('"\\ud800"')), code=PARSE_ERROR)


def test_lone_surrogate_escape_in_a_metadata_key_is_parse_error(client_a: httpx.Client) -> None:
    msg = text_message_json('"ok"', ',"metadata":{"\\uDFFF":1}')
    expect_error(send_raw_message_json(client_a, msg), code=PARSE_ERROR)


def test_surrogate_pair_escape_is_valid_text(client_a: httpx.Client) -> None:
    msg = text_message_json('"\\ud83d\\ude00"').replace("raw-1", "raw-pair-escape")
    task = expect_result(send_raw_message_json(client_a, msg))
    assert task["artifacts"][0]["parts"][0]["text"] == "\U0001f600"


@pytest.mark.parametrize("depth", [100, 10_000])
def test_deep_nesting_is_a_json_rpc_error_never_500(client_a: httpx.Client, depth: int) -> None:
    nested = "[" * depth + "]" * depth
    msg = text_message_json('"x"', f',"metadata":{{"d":{nested}}}')
    response = send_raw_message_json(client_a, msg)
    assert response.status_code == 200
    code = response.json()["error"]["code"]
    assert code in (INVALID_REQUEST, PARSE_ERROR)
    expect_error(response, code=code)


# -- step 9: envelope ----------------------------------------------------------------------


def test_batch_array_is_invalid_request_with_null_id(client_a: httpx.Client) -> None:
    batch = [envelope("tasks/get", {"id": "x"}, 1), envelope("tasks/get", {"id": "y"}, 2)]
    expect_error(post_json(client_a, batch), code=INVALID_REQUEST)


def test_empty_batch_is_invalid_request(client_a: httpx.Client) -> None:
    expect_error(post_json(client_a, []), code=INVALID_REQUEST)


@pytest.mark.parametrize("body", ['"tasks/get"', "42", "null", "true"])
def test_non_object_body_is_invalid_request(client_a: httpx.Client, body: str) -> None:
    expect_error(post_body(client_a, body.encode()), code=INVALID_REQUEST)


@pytest.mark.parametrize("version", ["1.0", 2.0, None, "2"])
def test_wrong_jsonrpc_version_is_invalid_request_with_id_echoed(
    client_a: httpx.Client, version: Any
) -> None:
    body = {**envelope("tasks/get", {"id": "x"}, "req-version"), "jsonrpc": version}
    expect_error(post_json(client_a, body), code=INVALID_REQUEST, request_id="req-version")


def test_missing_jsonrpc_member_is_invalid_request_with_id_echoed(client_a: httpx.Client) -> None:
    body = envelope("tasks/get", {"id": "x"}, 77)
    del body["jsonrpc"]
    expect_error(post_json(client_a, body), code=INVALID_REQUEST, request_id=77)


def test_missing_id_is_answered_with_null_id_after_the_method(client_a: httpx.Client) -> None:
    body = envelope("tasks/get", {"id": "x"})
    del body["id"]
    expect_error(post_json(client_a, body), code=TASK_NOT_FOUND)
    body = envelope("tasks/none", {})
    del body["id"]
    expect_error(post_json(client_a, body), code=METHOD_NOT_FOUND)


@pytest.mark.parametrize(
    "bad_id",
    [None, 1.5, True, False, 2**63, 2**53, -(2**53), "x" * 129, [], {}],
    ids=[
        "null",
        "float",
        "true",
        "false",
        "2**63",
        "2**53",
        "-2**53",
        "string-129",
        "array",
        "object",
    ],
)
def test_invalid_id_is_invalid_request_with_null_id(client_a: httpx.Client, bad_id: Any) -> None:
    expect_error(
        post_json(client_a, envelope("tasks/get", {"id": "x"}, bad_id)), code=INVALID_REQUEST
    )


def test_integral_float_id_is_the_integer_json_schema_says_it_is(client_a: httpx.Client) -> None:
    response = post_json(client_a, envelope("tasks/get", {"id": "no-such-task"}, 1.0))
    expect_error(response, code=TASK_NOT_FOUND, request_id=1)


@pytest.mark.parametrize(
    "good_id",
    ["x" * 128, 2**53 - 1, -(2**53 - 1), 0, -5, "", "req 1"],
    ids=["string-128", "max-safe", "min-safe", "zero", "negative", "empty-string", "space"],
)
def test_valid_id_is_echoed_with_its_type(client_a: httpx.Client, good_id: str | int) -> None:
    response = post_json(client_a, envelope("tasks/get", {"id": "no-such-task"}, good_id))
    expect_error(response, code=TASK_NOT_FOUND, request_id=good_id)


@pytest.mark.parametrize("method", [5, None, ["tasks/get"], {"name": "tasks/get"}])
def test_non_string_method_is_invalid_request_with_id_echoed(
    client_a: httpx.Client, method: Any
) -> None:
    expect_error(
        post_json(client_a, envelope(method, {"id": "x"}, "req-method")),
        code=INVALID_REQUEST,
        request_id="req-method",
    )


def test_missing_method_is_invalid_request_with_id_echoed(client_a: httpx.Client) -> None:
    body = envelope("tasks/get", {"id": "x"}, 9)
    del body["method"]
    expect_error(post_json(client_a, body), code=INVALID_REQUEST, request_id=9)


def test_unexpected_envelope_member_is_invalid_request(client_a: httpx.Client) -> None:
    body = {**envelope("tasks/get", {"id": "x"}, 10), "extra": 1}
    expect_error(post_json(client_a, body), code=INVALID_REQUEST, request_id=10)


@pytest.mark.parametrize("params", [["x"], "x", 5, None])
def test_non_object_params_is_invalid_params_with_id_echoed(
    client_a: httpx.Client, params: Any
) -> None:
    body = {**envelope("tasks/get", None, "req-params"), "params": params}
    expect_error(post_json(client_a, body), code=INVALID_PARAMS, request_id="req-params")


# -- step 10: method -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "method", ["tasks/list", "", "message/streams", "TASKS/GET", "rpc.discover"]
)
def test_unknown_method_is_method_not_found_with_id_echoed(
    client_a: httpx.Client, method: str
) -> None:
    expect_error(
        post_json(client_a, envelope(method, {}, "req-unknown")),
        code=METHOD_NOT_FOUND,
        request_id="req-unknown",
    )


# -- step 11: params -----------------------------------------------------------------------


def test_params_omitted_is_invalid_params(client_a: httpx.Client) -> None:
    error = expect_error(
        post_json(client_a, envelope("tasks/get", None, 3)), code=INVALID_PARAMS, request_id=3
    )
    assert {"loc": ["id"], "type": "missing"}.items() <= validation_errors(error)[0].items()


def test_envelope_method_wins_over_smuggled_params_method(client_a: httpx.Client) -> None:
    params = {"method": "message/send", "message": message("smuggled")}
    error = expect_error(
        post_json(client_a, envelope("tasks/get", params, "smuggle")),
        code=INVALID_PARAMS,
        request_id="smuggle",
    )
    issues = {(tuple(i["loc"]), i["type"]) for i in validation_errors(error)}
    assert (("message",), "extra_forbidden") in issues  # validated as tasks/get
    assert (("id",), "missing") in issues


def test_params_method_matching_the_envelope_is_accepted(client_a: httpx.Client) -> None:
    params = {"method": "tasks/get", "id": "no-such-task"}
    expect_error(
        post_json(client_a, envelope("tasks/get", params, 4)), code=TASK_NOT_FOUND, request_id=4
    )


def test_validation_errors_are_loc_msg_type_only(client_a: httpx.Client) -> None:
    msg = {"kind": "message", "messageId": "", "role": "user", "parts": [], "unknown": 1}
    error = expect_error(send(client_a, msg, 5), code=INVALID_PARAMS, request_id=5)
    issues = validation_errors(error)
    assert len(issues) >= 3  # messageId too short, parts empty, unknown key


ECHO_CASES = [
    pytest.param("tasks/get", {"id": "x", "historyLength": MARKER}, id="string-for-integer"),
    pytest.param("tasks/get", {"id": f"!{MARKER} with spaces"}, id="pattern-mismatch"),
    pytest.param("tasks/get", {"id": ["x", MARKER]}, id="array-for-string"),
    pytest.param("message/send", {"message": message(role=MARKER)}, id="role-literal"),
    pytest.param(
        "message/send",
        {"message": {**message(), "parts": [{"kind": "text", "text": 12345, "metadata": MARKER}]}},
        id="part-fields",
    ),
    pytest.param(
        "message/send",
        {"message": {**message(), "parts": [{"kind": MARKER, "text": "x"}]}},
        id="part-kind-tag",
    ),
]


@pytest.mark.parametrize(("method", "params"), ECHO_CASES)
def test_invalid_params_never_echo_the_input_value(
    client_a: httpx.Client, method: str, params: Any
) -> None:
    response = post_json(client_a, envelope(method, params, "echo-check"))
    validation_errors(expect_error(response, code=INVALID_PARAMS, request_id="echo-check"))
    assert MARKER not in response.text


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tasks/get", {"id": "x", "historyLength": None}),
        ("tasks/get", {"id": "x", "metadata": None}),
        ("message/send", {"message": message(contextId=None)}),
        ("message/send", {"message": message(), "configuration": None}),
    ],
    ids=["historyLength", "metadata", "message.contextId", "configuration"],
)
def test_explicit_null_for_optional_field_is_invalid_params(
    client_a: httpx.Client, method: str, params: Any
) -> None:
    error = expect_error(
        post_json(client_a, envelope(method, params, 6)), code=INVALID_PARAMS, request_id=6
    )
    validation_errors(error)


# -- step 12: an unexpected fault ----------------------------------------------------------


def corrupt_task(data_dir: Path, peer: str) -> str:
    """A stored task whose JSON body cannot be read: the handler will fault on it."""
    task_id = unique("corrupt")
    db = open_database(data_dir)
    try:
        db.writer.execute(
            "INSERT INTO tasks (id, peer, context_id, state, body) VALUES (?, ?, ?, ?, ?)",
            (task_id, peer, "ctx", "TASK_STATE_COMPLETED", f"{{not json {MARKER}"),
        )
    finally:
        db.close()
    return task_id


def test_handler_fault_is_500_internal_error_without_details(
    gateway: LiveNode, client_a: httpx.Client
) -> None:
    task_id = corrupt_task(gateway.data_dir, PEER_A)
    response = get_task(client_a, task_id, request_id="fault")
    error = expect_error(response, status=500, code=INTERNAL_ERROR, request_id="fault")
    assert "data" not in error
    assert MARKER not in response.text and "Traceback" not in response.text
    event = gateway.wait_for_event("a2a.inbound.internal_error", request_id="fault")
    assert event["method"] == "tasks/get"
