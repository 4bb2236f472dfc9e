"""JSON-RPC error codes and the error envelope every refusal is written as."""

from __future__ import annotations

import json
from typing import Any

# JSON-RPC 2.0
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# A2A
TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002
UNAUTHENTICATED = -32003
FORBIDDEN = -32004
# SynthOrg extension (documented in spec/schemas/jsonrpc.json)
MESSAGE_ID_CONFLICT = -32010
TASK_TERMINAL = -32011
UNKNOWN_AGENT = -32012
UNKNOWN_PEER = -32020
PEER_UNAVAILABLE = -32021
DELEGATION_LOOP = -32030

RequestId = str | int | None


class RpcError(Exception):
    """A JSON-RPC error a handler raises; the pipeline turns it into an envelope."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def error_envelope(
    code: int, message: str, request_id: RequestId = None, data: dict[str, Any] | None = None
) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def error_body(
    code: int, message: str, request_id: RequestId = None, data: dict[str, Any] | None = None
) -> bytes:
    return json.dumps(error_envelope(code, message, request_id, data)).encode()
