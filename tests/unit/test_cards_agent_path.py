"""The per-agent JSON-RPC endpoint `/api/v1/a2a/agents/{agent_id}/` on a real node, driven in
process through its ASGI app: gated exactly like `/api/v1/a2a/`; an ill-formed id refused right
after the gates, before any body byte is read; a well-formed id that names no agent of this
node refused after the body; a known agent's id handed to the JSON-RPC pipeline."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from synthorg.admin.token import TOKEN_ENV
from synthorg.gateway.endpoint import RpcTarget, rpc_target
from synthorg.node import Node
from synthorg.observability.events import a2a as events
from synthorg.observability.log import LOGGER_NAME
from tests.support.codes import (
    INVALID_REQUEST,
    PEER_NOT_ALLOWED,
    TASK_NOT_FOUND,
    UNAUTHENTICATED,
    UNKNOWN_AGENT,
)

SECRET = "agent-path-secret"
ADMIN_TOKEN = "agent-path-admin-token-0123456789"
LIMIT = 1024
CONFIG = f"""\
agents:
  - id: echo
    name: Echo
    executor: {{kind: echo}}
  - id: writer
    name: Writer
    executor: {{kind: echo}}
a2a:
  enabled: true
  allowed_peers: [peer-a]
  max_request_body_bytes: {LIMIT}
"""
AUTH = [(b"x-a2a-peer-name", b"peer-a"), (b"x-api-key", SECRET.encode())]
JSON = [(b"content-type", b"application/json")]
NOT_FOUND = {"error": "not_found", "message": "No such path"}


def build(data_dir: Path, config: str) -> Node:
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.yaml").write_text(config)
    with pytest.MonkeyPatch.context() as env:
        env.setenv(TOKEN_ENV, ADMIN_TOKEN)
        node = Node.build(data_dir)
    node.catalog.put("peer-a", "http://127.0.0.1:9", "api_key", SECRET)
    return node


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    node = build(tmp_path_factory.mktemp("node"), CONFIG)
    yield node.app()
    node.close()


@pytest.fixture(scope="module")
def disabled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    config = CONFIG.replace("enabled: true", "enabled: false")
    node = build(tmp_path_factory.mktemp("disabled"), config)
    yield node.app()
    node.close()


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger=LOGGER_NAME)
    return caplog


def emitted(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, Any]]:
    found = [json.loads(r.getMessage()) for r in caplog.records if r.name == LOGGER_NAME]
    return [event for event in found if event["event"] == name]


@dataclass
class Result:
    status: int
    headers: dict[str, str]
    body: Any
    received: int


def call(
    app: Any,
    path: str,
    headers: list[tuple[bytes, bytes]],
    method: str = "POST",
    body: bytes = b"{}",
    content_length: bool = True,
) -> Result:
    """One request; the body comes in one receive() (counted), with its length unless
    `content_length` is False (as a chunked request would)."""
    received = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal received
        received += 1
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    length = [(b"content-length", str(len(body)).encode())] if content_length else []
    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(),
             "headers": [*headers, *length], "query_string": b""}
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    raw = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    headers_out = {k.decode(): v.decode() for k, v in start["headers"]}
    return Result(start["status"], headers_out, json.loads(raw), received)


def rpc(method: str, params: dict[str, Any], request_id: int | str = 1) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    ).encode()


def send_message(message_id: str) -> bytes:
    message = {
        "kind": "message",
        "messageId": message_id,
        "role": "user",
        "parts": [{"kind": "text", "text": "hi"}],
    }
    return rpc("message/send", {"message": message})


def assert_refused(result: Result, status: int, code: int) -> None:
    assert result.status == status
    assert result.headers["content-type"] == "application/json"
    assert result.body["jsonrpc"] == "2.0"
    assert result.body["id"] is None
    assert result.body["error"]["code"] == code
    assert "result" not in result.body


# -- admitted calls reach the pipeline with the agent --------------------------------------------


@pytest.mark.parametrize("path", ["/api/v1/a2a/agents/writer/", "/api/v1/a2a/agents/writer"])
def test_admitted_call_reaches_the_pipeline_with_the_agent(app: Any, path: str) -> None:
    result = call(app, path, AUTH + JSON, body=send_message(f"agent-path-{len(path)}"))
    assert "result" in result.body, result.body
    assert result.status == 200
    assert result.body["id"] == 1
    assert result.body["result"]["kind"] == "task"
    assert result.body["result"]["metadata"]["agentId"] == "writer"  # not the default, echo
    assert result.received == 1


def test_the_path_names_the_agent_whatever_the_message_says(app: Any) -> None:
    message = json.loads(send_message("agent-path-override"))
    message["params"]["message"]["metadata"] = {"agentId": "echo"}
    body = json.dumps(message).encode()
    result = call(app, "/api/v1/a2a/agents/writer/", AUTH + JSON, body=body)
    assert result.body["result"]["metadata"]["agentId"] == "writer"


def test_an_agent_endpoint_answers_like_the_node_endpoint(app: Any) -> None:
    result = call(app, "/api/v1/a2a/agents/echo/", AUTH + JSON)  # `{}`: no id
    assert_refused(result, 200, INVALID_REQUEST)
    missing = rpc("tasks/get", {"id": "no-such-task"}, request_id="q")
    result = call(app, "/api/v1/a2a/agents/echo/", AUTH + JSON, body=missing)
    assert result.status == 200
    assert (result.body["id"], result.body["error"]["code"]) == ("q", TASK_NOT_FOUND)


# -- the gates run first, whatever the agent -----------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ([], 401, UNAUTHENTICATED),
        ([(b"x-a2a-peer-name", b"stranger")], 403, PEER_NOT_ALLOWED),
        ([(b"x-a2a-peer-name", b"peer-a"), (b"x-api-key", b"wrong")], 401, UNAUTHENTICATED),
        ([(b"x-a2a-peer-name", b"peer-a"), (b"x-api-key", ADMIN_TOKEN.encode())], 401,
         UNAUTHENTICATED),
    ],
)
@pytest.mark.parametrize("agent", ["writer", "nobody", "Not_Valid", "%00", "é"])
def test_the_gates_run_first_whatever_the_agent(
    app: Any, headers: list[tuple[bytes, bytes]], status: int, code: int, agent: str
) -> None:
    result = call(app, f"/api/v1/a2a/agents/{agent}/", headers + JSON)
    assert_refused(result, status, code)
    assert result.received == 0


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
@pytest.mark.parametrize("agent", ["writer", "nobody", "Bad"])
def test_only_post_is_allowed(app: Any, method: str, agent: str) -> None:
    result = call(app, f"/api/v1/a2a/agents/{agent}/", AUTH + JSON, method=method)
    assert_refused(result, 405, INVALID_REQUEST)
    assert result.headers["allow"] == "POST"
    assert result.received == 0


@pytest.mark.parametrize("path", ["/api/v1/a2a/agents/writer/", "/api/v1/a2a/agents/Bad/"])
def test_disabled_gateway_hides_agent_endpoints(disabled: Any, path: str) -> None:
    for headers in (AUTH + JSON, []):
        result = call(disabled, path, headers)
        assert (result.status, result.body) == (404, NOT_FOUND)
        assert result.received == 0


# -- ill-formed ids: after the gates, before the body --------------------------------------------


@pytest.mark.parametrize("agent", ["Writer", "é", "a" * 64, "-x", "a b", "_x", "x.y", "%41"])
def test_ill_formed_agent_ids_are_refused_after_the_gates_unread(
    app: Any, agent: str, logs: pytest.LogCaptureFixture
) -> None:
    result = call(app, f"/api/v1/a2a/agents/{agent}/", AUTH + JSON)
    assert_refused(result, 404, UNKNOWN_AGENT)
    assert result.received == 0
    [event] = emitted(logs, events.INBOUND_REJECTED)
    assert (event["reason"], event["status"]) == ("unknown_agent", 404)
    assert event["peer_name"] == "peer-a"
    assert event["path"] == "/api/v1/a2a/agents/<invalid>/"  # the caller's segment is not logged


def test_an_ill_formed_id_is_refused_after_step_2_and_before_steps_6_and_7(app: Any) -> None:
    path = "/api/v1/a2a/agents/Bad/"
    oversized = b"x" * (LIMIT + 1)
    assert_refused(call(app, path, AUTH + JSON, body=oversized), 413, INVALID_REQUEST)
    text = [*AUTH, (b"content-type", b"text/plain")]
    for result in (
        call(app, path, text),
        call(app, path, AUTH + JSON, body=oversized, content_length=False),
    ):
        assert_refused(result, 404, UNKNOWN_AGENT)
        assert result.received == 0


# -- well-formed ids naming no agent: after the body ---------------------------------------------


@pytest.mark.parametrize("agent", ["nobody", "writer2", "a" * 63])
def test_unknown_agent_ids_are_refused_after_the_body(
    app: Any, agent: str, logs: pytest.LogCaptureFixture
) -> None:
    body = rpc("tasks/get", {"id": "no-such-task"}, request_id=9)
    result = call(app, f"/api/v1/a2a/agents/{agent}/", AUTH + JSON, body=body)
    assert_refused(result, 404, UNKNOWN_AGENT)  # id null: the body is never parsed
    assert result.received == 1
    [event] = emitted(logs, events.INBOUND_REJECTED)
    assert (event["reason"], event["path"]) == ("unknown_agent", f"/api/v1/a2a/agents/{agent}/")
    assert emitted(logs, events.INBOUND_RECEIVED) == []


def test_an_unknown_agent_id_is_refused_after_steps_6_and_7(app: Any) -> None:
    headers = [*AUTH, (b"content-type", b"text/plain")]
    result = call(app, "/api/v1/a2a/agents/nobody/", headers)
    assert_refused(result, 415, INVALID_REQUEST)
    assert result.received == 0
    oversized = b"x" * (LIMIT + 1)
    result = call(app, "/api/v1/a2a/agents/nobody/", AUTH + JSON, body=oversized,
                  content_length=False)
    assert_refused(result, 413, INVALID_REQUEST)  # streamed: step 7 refused it
    assert result.received == 1


# -- which paths are agent endpoints -------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/api/v1/a2a/agents/", "/api/v1/a2a/agents", "/api/v1/a2a/agents/a/b",
     "/api/v1/a2a/agents//", "/api/v1/a2a/agentsx/a/", "/.well-known/agents/a/agent-card.json",
     "/api/v1/a2a/agents/a//", "/api/v1/a2a/x"],
)
def test_other_paths_are_not_rpc_endpoints(app: Any, path: str) -> None:
    assert rpc_target(path) is None
    result = call(app, path, AUTH + JSON)
    assert result.status in (404, 405)
    assert "jsonrpc" not in result.body  # the node's not-found document, not a gateway refusal
    assert result.received == 0


def test_rpc_targets() -> None:
    assert rpc_target("/api/v1/a2a") == RpcTarget(None, "/api/v1/a2a")
    assert rpc_target("/api/v1/a2a/") == RpcTarget(None, "/api/v1/a2a/")
    assert rpc_target("/api/v1/a2a/agents/writer") == RpcTarget(
        "writer", "/api/v1/a2a/agents/writer/"
    )
    assert rpc_target("/api/v1/a2a/agents/writer/") == RpcTarget(
        "writer", "/api/v1/a2a/agents/writer/"
    )
    target = rpc_target("/api/v1/a2a/agents/Bad/")
    assert target is not None
    assert target.agent == "Bad"
    assert "Bad" not in target.log_path
