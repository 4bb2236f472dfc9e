"""The per-agent JSON-RPC endpoint `/api/v1/a2a/agents/{agent_id}/` through GatewayMiddleware:
gated exactly like `/api/v1/a2a/`, the agent id handed on in the scope, ill-formed ids refused
after the gates and before any body byte is read."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from synthorg.gateway.auth import PeerGate
from synthorg.gateway.errors import FORBIDDEN, UNAUTHENTICATED, UNKNOWN_AGENT
from synthorg.gateway.transport import SCOPE_AGENT, GatewayMiddleware, rpc_target

SECRET = "agent-path-secret"
AUTH = [(b"x-a2a-peer-name", b"peer-a"), (b"x-api-key", SECRET.encode())]
JSON = [(b"content-type", b"application/json")]


@dataclass(frozen=True)
class Record:
    scheme: str
    secret: str


class Catalog:
    def get(self, name: str) -> Record | None:
        return Record("api_key", SECRET) if name == "peer-a" else None


@dataclass
class Settings:
    enabled: bool = True
    max_request_body_bytes: int = 1024
    gate: PeerGate = field(default_factory=lambda: PeerGate(frozenset({"peer-a"}), Catalog()))


@dataclass
class Result:
    status: int
    body: dict[str, Any]
    inner: dict[str, Any] | None
    received: int


def call(path: str, headers: list[tuple[bytes, bytes]], method: str = "POST",
         settings: Settings | None = None) -> Result:
    seen: list[dict[str, Any]] = []
    received = 0

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def receive() -> dict[str, Any]:
        nonlocal received
        received += 1
        return {"type": "http.request", "body": b"{}", "more_body": False}

    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    current = settings or Settings()
    middleware = GatewayMiddleware(app, settings_provider=lambda: current)
    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(),
             "headers": headers, "query_string": b""}
    asyncio.run(middleware(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return Result(status, json.loads(body), seen[0] if seen else None, received)


@pytest.mark.parametrize("path", ["/api/v1/a2a/agents/writer/", "/api/v1/a2a/agents/writer"])
def test_admitted_call_reaches_the_app_with_the_agent(path: str) -> None:
    result = call(path, AUTH + JSON)
    assert result.status == 200
    assert result.inner is not None
    assert result.inner["path"] == "/api/v1/a2a/agents/writer/"
    assert result.inner["raw_path"] == b"/api/v1/a2a/agents/writer/"
    assert result.inner[SCOPE_AGENT] == "writer"
    assert result.inner["synthorg.peer"] == "peer-a"


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ([], 401, UNAUTHENTICATED),
        ([(b"x-a2a-peer-name", b"stranger")], 403, FORBIDDEN),
        ([(b"x-a2a-peer-name", b"peer-a"), (b"x-api-key", b"wrong")], 401, UNAUTHENTICATED),
    ],
)
@pytest.mark.parametrize("agent", ["writer", "Not_Valid", "%00"])
def test_the_gates_run_first_whatever_the_agent(
    headers: list[tuple[bytes, bytes]], status: int, code: int, agent: str
) -> None:
    result = call(f"/api/v1/a2a/agents/{agent}/", headers + JSON)
    assert (result.status, result.body["error"]["code"]) == (status, code)
    assert result.inner is None
    assert result.received == 0


def test_only_post_is_allowed() -> None:
    result = call("/api/v1/a2a/agents/writer/", AUTH + JSON, method="GET")
    assert result.status == 405
    assert result.inner is None


def test_disabled_gateway_hides_agent_endpoints() -> None:
    result = call("/api/v1/a2a/agents/writer/", AUTH + JSON, settings=Settings(enabled=False))
    assert result.inner is not None
    assert result.inner["path"] == "/__a2a_disabled__"


@pytest.mark.parametrize("agent", ["Writer", "é", "a" * 64, "-x", "a b"])
def test_ill_formed_agent_ids_are_refused_after_the_gates_unread(agent: str) -> None:
    result = call(f"/api/v1/a2a/agents/{agent}/", AUTH + JSON)
    assert result.status == 404
    assert result.body["error"]["code"] == UNKNOWN_AGENT
    assert result.body["id"] is None
    assert result.inner is None
    assert result.received == 0


@pytest.mark.parametrize(
    "path",
    ["/api/v1/a2a/agents/", "/api/v1/a2a/agents", "/api/v1/a2a/agents/a/b",
     "/api/v1/a2a/agents//", "/api/v1/a2a/agentsx/a/", "/.well-known/agents/a/agent-card.json"],
)
def test_other_paths_are_not_rpc_endpoints(path: str) -> None:
    assert rpc_target(path) is None


def test_rpc_targets() -> None:
    assert rpc_target("/api/v1/a2a") == ("/api/v1/a2a/", None, "/api/v1/a2a")
    target = rpc_target("/api/v1/a2a/agents/Bad/")
    assert target is not None
    assert target.agent == "Bad"
    assert "Bad" not in target.log_path
