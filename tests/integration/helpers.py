"""Request builders and response assertions shared by the live-node tests.

Error codes are written out here from the spec (JSON-RPC 2.0, A2A, SynthOrg extension)
rather than imported from the product, so a wrong constant in the product fails a test.
"""

from __future__ import annotations

import contextlib
import json
import socket
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

RPC_PATH = "/api/v1/a2a/"
BARE_PATH = "/api/v1/a2a"
JSON = "application/json"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002
UNAUTHENTICATED = -32003
PEER_NOT_ALLOWED = -32004
MESSAGE_ID_CONFLICT = -32010
TASK_TERMINAL = -32011
UNKNOWN_AGENT = -32012

RequestId = str | int | None
Json = dict[str, Any]


# -- request builders ---------------------------------------------------------------------


def unique(prefix: str = "m") -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def envelope(method: Any, params: Any = None, request_id: RequestId = 1) -> Json:
    body: Json = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return body


def message(
    *texts: str,
    message_id: str | None = None,
    task_id: str | None = None,
    agent_id: str | None = None,
    role: str = "user",
    **extra: Any,
) -> Json:
    """An A2A Message with one text part per text (default: a single "hello")."""
    msg: Json = {
        "kind": "message",
        "messageId": message_id or unique("msg"),
        "role": role,
        "parts": [{"kind": "text", "text": text} for text in (texts or ("hello",))],
    }
    if task_id is not None:
        msg["taskId"] = task_id
    if agent_id is not None:
        msg["metadata"] = {"agentId": agent_id}
    msg.update(extra)
    return msg


def call(
    client: httpx.Client,
    method: Any,
    params: Any = None,
    request_id: RequestId = 1,
    path: str = RPC_PATH,
) -> httpx.Response:
    return client.post(path, json=envelope(method, params, request_id))


def post_body(
    client: httpx.Client,
    body: bytes | Iterable[bytes],
    content_type: str | None = JSON,
    path: str = RPC_PATH,
    headers: Mapping[str, str] | None = None,
) -> httpx.Response:
    all_headers = dict(headers or {})
    if content_type is not None:
        all_headers["Content-Type"] = content_type
    return client.post(path, content=body, headers=all_headers)


def send(client: httpx.Client, msg: Json, request_id: RequestId = 1) -> httpx.Response:
    return call(client, "message/send", {"message": msg}, request_id)


def get_task(
    client: httpx.Client, task_id: str, history_length: int | None = None, request_id: RequestId = 1
) -> httpx.Response:
    params: Json = {"id": task_id}
    if history_length is not None:
        params["historyLength"] = history_length
    return call(client, "tasks/get", params, request_id)


def cancel_task(client: httpx.Client, task_id: str, request_id: RequestId = 1) -> httpx.Response:
    return call(client, "tasks/cancel", {"id": task_id}, request_id)


def create_task(client: httpx.Client, *texts: str, agent_id: str | None = None) -> Json:
    return expect_result(send(client, message(*texts, agent_id=agent_id)))


def park_task(client: httpx.Client) -> Json:
    task = create_task(client, "park me", agent_id="parker")
    assert task["status"]["state"] == "input-required"
    return task


def padded(body: Json, size: int) -> bytes:
    """`body` as JSON, padded with insignificant whitespace to exactly `size` bytes."""
    raw = json.dumps(body).encode()
    assert len(raw) <= size
    return raw + b" " * (size - len(raw))


# -- response assertions ------------------------------------------------------------------


def _same_id(actual: Any, expected: RequestId) -> bool:
    # `True == 1` in Python: compare types too, so a bool id never passes for an int.
    return actual == expected and type(actual) is type(expected)


def json_envelope(status: int, headers: Mapping[str, str], content: bytes, expected: int) -> Json:
    assert status == expected, f"HTTP {status}, wanted {expected}: {content[:300]!r}"
    assert headers.get("content-type") == JSON
    body = json.loads(content)
    assert isinstance(body, dict)
    assert body.get("jsonrpc") == "2.0"
    assert "id" in body
    return body


def expect_error(
    response: httpx.Response | RawResponse,
    *,
    code: int,
    status: int = 200,
    request_id: RequestId = None,
) -> Json:
    """Assert a JSON-RPC error envelope; returns its `error` member."""
    body = json_envelope(response.status_code, response.headers, response.content, status)
    assert "result" not in body, body
    assert _same_id(body["id"], request_id), f"id {body['id']!r}, wanted {request_id!r}"
    error = body["error"]
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"]
    assert set(error) <= {"code", "message", "data"}
    return dict(error)


def expect_result(response: httpx.Response, request_id: RequestId = 1) -> Json:
    """Assert a JSON-RPC success envelope; returns its `result` member."""
    body = json_envelope(response.status_code, response.headers, response.content, 200)
    assert "error" not in body, body
    assert _same_id(body["id"], request_id)
    result = body["result"]
    assert isinstance(result, dict)
    return result


def validation_errors(error: Json) -> list[Json]:
    """`data.errors` of a -32602, checked to be [{loc, msg, type}] and nothing more."""
    assert error["code"] == INVALID_PARAMS
    issues = error["data"]["errors"]
    assert isinstance(issues, list) and issues
    for issue in issues:
        assert set(issue) == {"loc", "msg", "type"}, issue
        assert isinstance(issue["loc"], list)
        assert isinstance(issue["msg"], str) and isinstance(issue["type"], str)
    return list(issues)


def user_message_ids(task: Json) -> list[str]:
    return [m["messageId"] for m in task.get("history", []) if m["role"] == "user"]


# -- raw HTTP over a socket (for framing the httpx client will not produce) -----------------


@dataclass
class RawResponse:
    status_code: int
    headers: dict[str, str]  # lower-cased names
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


HeaderValue = str | bytes
RawHeaders = Mapping[str, HeaderValue] | Iterable[tuple[str, HeaderValue]]


def request_head(
    length: int | None = None, headers: RawHeaders | None = None, path: str = RPC_PATH
) -> bytes:
    """A POST request head; bytes values go on the wire as-is, pairs may repeat a name."""
    pairs = headers.items() if isinstance(headers, Mapping) else (headers or [])
    lines = [f"POST {path} HTTP/1.1".encode(), b"Host: 127.0.0.1"]
    for name, value in pairs:
        raw = value if isinstance(value, bytes) else value.encode("latin-1")
        lines.append(name.encode("ascii") + b": " + raw)
    if length is not None:
        lines.append(b"Content-Length: %d" % length)
    return b"\r\n".join(lines) + b"\r\n\r\n"


def raw_exchange(port: int, data: bytes, timeout: float = 10.0) -> RawResponse:
    """Send `data` as-is and read one response (framed by its Content-Length)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        # The server may answer and close before it has read everything we send.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
        buffer = b""
        while True:
            response = _parse_response(buffer)
            if response is not None:
                return response
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise AssertionError(f"connection closed mid-response: {buffer[:300]!r}")
            buffer += chunk


def _parse_response(buffer: bytes) -> RawResponse | None:
    head, sep, rest = buffer.partition(b"\r\n\r\n")
    if not sep:
        return None
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    if len(rest) < length:
        return None
    return RawResponse(int(status_line.split()[1]), headers, rest[:length])
