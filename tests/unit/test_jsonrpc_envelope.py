"""The JSON-RPC envelope's bytes: what peers and tests read, byte for byte."""

from __future__ import annotations

import json

from synthorg import jsonrpc
from synthorg.generated.constants import INTERNAL_ERROR, INVALID_REQUEST, JSONRPC_VERSION
from synthorg.generated.models import TasksGetParams


def test_the_version_is_the_specs() -> None:
    assert JSONRPC_VERSION == "2.0"


def test_a_result_splices_the_encoded_result_as_is() -> None:
    raw = b'{"kind": "task", "id": "t"}'
    assert jsonrpc.result(jsonrpc.encoded_id("r-1"), raw) == (
        b'{"jsonrpc": "2.0", "id": "r-1", "result": {"kind": "task", "id": "t"}}'
    )
    assert jsonrpc.result(jsonrpc.encoded_id(None), b"null") == (
        b'{"jsonrpc": "2.0", "id": null, "result": null}'
    )
    assert json.loads(jsonrpc.result(jsonrpc.encoded_id(7), raw))["result"] == json.loads(raw)


def test_an_error_carries_the_code_its_message_and_data_if_any() -> None:
    assert jsonrpc.error(INTERNAL_ERROR) == (
        b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32603, "message": "Internal error"}}'
    )
    assert json.loads(jsonrpc.error(INVALID_REQUEST, "too big", 3, {"why": "size"})) == {
        "jsonrpc": "2.0", "id": 3,
        "error": {"code": INVALID_REQUEST.code, "message": "too big", "data": {"why": "size"}},
    }


def test_a_request() -> None:
    assert jsonrpc.request("tasks/get", {"id": "t"}, 1) == (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "t"}}'
    )


def test_a_call_serialises_its_params_model_once_without_the_method_member() -> None:
    params = TasksGetParams(method="tasks/get", id="t", historyLength=2)
    body = jsonrpc.call(params, "r-1")
    assert body.startswith(b'{"jsonrpc": "2.0", "id": "r-1", "method": "tasks/get", "params": ')
    assert json.loads(body) == {"jsonrpc": "2.0", "id": "r-1", "method": "tasks/get",
                                "params": {"id": "t", "historyLength": 2}}
