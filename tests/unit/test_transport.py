"""GatewayMiddleware driven as a bare ASGI callable: DESIGN §4 steps 0-7 and their order."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from starlette.types import Message

from synthorg.a2a.auth import PeerGate
from synthorg.a2a.errors import FORBIDDEN, INTERNAL_ERROR, INVALID_REQUEST, UNAUTHENTICATED
from synthorg.a2a.transport import CANONICAL_PATH, DISABLED_PATH, GatewayMiddleware
from synthorg.observability import log
from synthorg.observability.events import a2a as events

SECRET = "top-secret-credential-value"
LIMIT = 64
GOOD = [
    (b"x-a2a-peer-name", b"peer-a"),
    (b"x-api-key", SECRET.encode()),
    (b"content-type", b"application/json"),
]


@dataclass(frozen=True)
class Record:
    scheme: str
    secret: str


class Catalog:
    def get(self, name: str) -> Record | None:
        return {"peer-a": Record("api_key", SECRET)}.get(name)


@dataclass
class Settings:
    enabled: bool = True
    max_request_body_bytes: int = LIMIT
    gate: PeerGate = field(default_factory=lambda: PeerGate(frozenset({"peer-a"}), Catalog()))


class Echo:
    """Downstream app: answers 200 with what it saw (path, peer, body) as JSON."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, Any]] = []
        self.second_receive: dict[str, Any] | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.scopes.append(scope)
        if scope["type"] != "http":
            return
        first = await receive()
        if scope.get("synthorg.peer") is not None:
            self.second_receive = await receive()
        payload = {
            "path": scope["path"],
            "raw_path": scope["raw_path"].decode(),
            "peer": scope.get("synthorg.peer"),
            "scope_body": (scope.get("synthorg.body") or b"").decode(),
            "received": first.get("body", b"").decode(),
        }
        body = json.dumps(payload).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})


@dataclass
class Response:
    status: int | None
    headers: dict[str, str]
    body: bytes
    receive_calls: int

    @property
    def json(self) -> Any:
        return json.loads(self.body)


def call(
    app: Any,
    *,
    method: str = "POST",
    path: str = "/api/v1/a2a/",
    headers: list[tuple[bytes, bytes]] | None = None,
    chunks: list[bytes] | None = None,
    content_length: bool = True,
    scope_type: str = "http",
) -> Response:
    """One request through ``app``. Chunks are fed one per receive(), then disconnect."""
    chunks = [b"{}"] if chunks is None else chunks
    hdrs = list(GOOD if headers is None else headers)
    if content_length:
        hdrs.append((b"content-length", str(sum(map(len, chunks))).encode()))
    scope = {
        "type": scope_type,
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "headers": hdrs,
        "query_string": b"",
    }
    queue = list(chunks)
    calls = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if queue:
            chunk = queue.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(queue)}
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = next((m for m in sent if m["type"] == "http.response.start"), None)
    return Response(
        status=start["status"] if start else None,
        headers={k.decode(): v.decode() for k, v in start["headers"]} if start else {},
        body=b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"),
        receive_calls=calls,
    )


def gateway(settings: Settings | None = None) -> tuple[GatewayMiddleware, Echo]:
    echo = Echo()
    current = settings or Settings()
    return GatewayMiddleware(echo, settings_provider=lambda: current), echo


def with_header(name: bytes, value: bytes | None) -> list[tuple[bytes, bytes]]:
    out = [(k, v) for k, v in GOOD if k != name]
    return out if value is None else [*out, (name, value)]


def assert_error(resp: Response, status: int, code: int) -> dict[str, Any]:
    assert resp.status == status
    assert resp.headers["content-type"] == "application/json"
    assert int(resp.headers["content-length"]) == len(resp.body)
    doc = resp.json
    assert doc["jsonrpc"] == "2.0"
    assert doc["id"] is None
    assert doc["error"]["code"] == code
    assert "result" not in doc
    return doc  # type: ignore[no-any-return]


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in map(json.loads, self.lines) if e["event"] == name]


@pytest.fixture(autouse=True)
def logs() -> Iterator[Capture]:
    logger = logging.getLogger(log.LOGGER_NAME)
    capture, old_level = Capture(), logger.level
    logger.addHandler(capture)
    logger.setLevel(logging.DEBUG)
    yield capture
    logger.removeHandler(capture)
    logger.setLevel(old_level)
    # Every line is one JSON object, and no secret ever reaches the log.
    for line in capture.lines:
        assert "\n" not in line
        json.loads(line)
        assert SECRET not in line
        assert "top-secret" not in line


# Admitted requests


@pytest.mark.parametrize("path", ["/api/v1/a2a", "/api/v1/a2a/"])
def test_admitted_request_reaches_app_normalised(path: str) -> None:
    app, _ = gateway()
    resp = call(app, path=path, chunks=[b'{"jsonrpc":', b'"2.0"}'])
    assert resp.status == 200
    assert resp.json == {
        "path": CANONICAL_PATH,
        "raw_path": CANONICAL_PATH,
        "peer": "peer-a",
        "scope_body": '{"jsonrpc":"2.0"}',
        "received": '{"jsonrpc":"2.0"}',
    }


def test_replay_then_delegates_to_real_receive() -> None:
    app, echo = gateway()
    call(app)
    # After the replayed body, receive() is the client's: the disconnect propagates.
    assert echo.second_receive == {"type": "http.disconnect"}


def test_original_scope_is_not_mutated() -> None:
    app, echo = gateway()
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/v1/a2a",
        "raw_path": b"/api/v1/a2a",
        "headers": GOOD,
    }
    messages = [{"type": "http.request", "body": b"{}", "more_body": False}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        pass

    asyncio.run(app(scope, receive, send))
    assert scope["path"] == "/api/v1/a2a"
    assert "synthorg.peer" not in scope
    assert echo.scopes[0] is not scope
    assert echo.scopes[0]["path"] == CANONICAL_PATH


def test_body_exactly_at_limit_is_accepted() -> None:
    app, _ = gateway()
    body = b"x" * LIMIT
    assert call(app, chunks=[body[:10], body[10:]]).json["scope_body"] == body.decode()
    assert call(app, chunks=[body], content_length=False).status == 200


def test_empty_body_is_forwarded() -> None:
    app, _ = gateway()
    resp = call(app, chunks=[b""])
    assert resp.status == 200
    assert resp.json["scope_body"] == ""


@pytest.mark.parametrize(
    "content_type",
    [
        b"application/json",
        b"application/json; charset=utf-8",
        b"Application/JSON",
        b"  application/json ;charset=UTF-8",
    ],
)
def test_json_content_types_accepted(content_type: bytes) -> None:
    app, _ = gateway()
    assert call(app, headers=with_header(b"content-type", content_type)).status == 200


# Pass-through


@pytest.mark.parametrize(
    "path", ["/", "/api/v1/a2a/x", "/api/v1/a2ax", "/.well-known/agent-card.json", "/API/V1/A2A"]
)
def test_other_paths_pass_through_untouched(path: str) -> None:
    app, echo = gateway()
    resp = call(app, method="GET", path=path, headers=[])
    assert resp.status == 200
    assert echo.scopes[0]["path"] == path
    assert "synthorg.peer" not in echo.scopes[0]


def test_non_http_scopes_pass_through() -> None:
    app, echo = gateway()
    for scope_type in ("lifespan", "websocket"):
        call(app, scope_type=scope_type, headers=[])
    assert [s["type"] for s in echo.scopes] == ["lifespan", "websocket"]
    assert all(s["path"] == "/api/v1/a2a/" for s in echo.scopes)


# Step 0: disabled


def test_disabled_hands_request_to_app_as_unknown_route() -> None:
    app, echo = gateway(Settings(enabled=False))
    for method in ("POST", "GET"):
        resp = call(app, method=method, headers=[])  # no credentials: gates never run
        assert resp.status == 200
        assert resp.json["path"] == DISABLED_PATH
        assert resp.json["peer"] is None
    assert [s["raw_path"] for s in echo.scopes] == [DISABLED_PATH.encode()] * 2


def test_settings_are_read_per_request() -> None:
    echo = Echo()
    current = Settings(enabled=False)
    app = GatewayMiddleware(echo, settings_provider=lambda: current)
    assert call(app).json["path"] == DISABLED_PATH
    current = Settings(max_request_body_bytes=1)
    assert_error(call(app), 413, INVALID_REQUEST)
    current = Settings()
    assert call(app).json["path"] == CANONICAL_PATH


def test_broken_settings_provider_answers_500(logs: Capture) -> None:
    def provider() -> Settings:
        raise RuntimeError("config reload failed")

    resp = call(GatewayMiddleware(Echo(), settings_provider=provider))
    assert_error(resp, 500, INTERNAL_ERROR)
    assert "config reload" not in resp.body.decode()


# Step 1: method


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "HEAD", "OPTIONS", "post"])
def test_non_post_is_405(method: str, logs: Capture) -> None:
    resp = call(gateway()[0], method=method)
    assert_error(resp, 405, INVALID_REQUEST)
    assert resp.headers["allow"] == "POST"
    assert resp.receive_calls == 0
    [event] = logs.events(events.INBOUND_REJECTED)
    assert (event["status"], event["reason"], event["path"]) == (
        405,
        "method_not_allowed",
        "/api/v1/a2a/",
    )


# Step 2: declared Content-Length


def test_declared_length_over_limit_is_413(logs: Capture) -> None:
    headers = [*GOOD, (b"content-length", str(LIMIT + 1).encode())]
    resp = call(gateway()[0], headers=headers, chunks=[b"x" * (LIMIT + 1)], content_length=False)
    assert_error(resp, 413, INVALID_REQUEST)
    assert resp.receive_calls == 0
    [event] = logs.events(events.INBOUND_REJECTED)
    assert (event["status"], event["reason"], event["declared"]) == (
        413,
        "body_too_large",
        LIMIT + 1,
    )


def test_absurd_declared_length_is_413_not_a_crash() -> None:
    headers = [*GOOD, (b"content-length", b"9" * 5000)]
    assert_error(call(gateway()[0], headers=headers, content_length=False), 413, INVALID_REQUEST)


@pytest.mark.parametrize(
    "value", [b"abc", b"-1", b"+5", b"1_0", b"1.5", b"", b"0x10", b"5, 5", b"\xd9\xa3"]
)
def test_invalid_content_length_is_400(value: bytes, logs: Capture) -> None:
    headers = [*GOOD, (b"content-length", value)]
    resp = call(gateway()[0], headers=headers, content_length=False)
    assert_error(resp, 400, INVALID_REQUEST)
    assert resp.receive_calls == 0
    assert logs.events(events.INBOUND_REJECTED)[0]["reason"] == "invalid_content_length"


def test_duplicate_content_length_headers_are_400() -> None:
    headers = [*GOOD, (b"content-length", b"2"), (b"content-length", b"2")]
    assert_error(call(gateway()[0], headers=headers, content_length=False), 400, INVALID_REQUEST)


# Steps 3-5: gates, on headers only, before any body byte is read


@pytest.mark.parametrize(
    ("headers", "status", "code", "reason"),
    [
        (with_header(b"x-a2a-peer-name", None), 401, UNAUTHENTICATED, "missing_peer_name"),
        (with_header(b"x-a2a-peer-name", b"not a name"), 401, UNAUTHENTICATED, "invalid_peer_name"),
        (with_header(b"x-a2a-peer-name", b"stranger"), 403, FORBIDDEN, "peer_not_allowed"),
        (with_header(b"x-api-key", None), 401, UNAUTHENTICATED, "missing_credential"),
        (with_header(b"x-api-key", b"wrong"), 401, UNAUTHENTICATED, "credential_mismatch"),
        (
            with_header(b"x-api-key", b"\xff\xfe\x00garbage"),
            401,
            UNAUTHENTICATED,
            "credential_mismatch",
        ),
    ],
)
def test_gate_refusals(
    headers: list[tuple[bytes, bytes]], status: int, code: int, reason: str, logs: Capture
) -> None:
    app, echo = gateway()
    resp = call(app, headers=headers, chunks=[b'{"big": "body"}'])
    assert_error(resp, status, code)
    assert resp.receive_calls == 0  # the body was never touched
    assert echo.scopes == []
    [event] = logs.events(events.INBOUND_AUTH_FAILED)
    assert event["reason"] == reason
    assert event["path"] == "/api/v1/a2a/"
    assert event["level"] == "warning"
    assert event["peer_name"] == (
        "stranger" if status == 403 else None if "peer_name" in reason else "peer-a"
    )


def test_gate_reads_bearer_from_raw_headers() -> None:
    headers = [*with_header(b"x-api-key", None), (b"authorization", b"bEaReR " + SECRET.encode())]
    assert call(gateway()[0], headers=headers).status == 200


def test_duplicate_credential_headers_are_refused() -> None:
    headers = [*GOOD, (b"x-api-key", b"other")]
    assert_error(call(gateway()[0], headers=headers), 401, UNAUTHENTICATED)


def test_utf8_peer_name_header_is_refused_without_crash() -> None:
    headers = with_header(b"x-a2a-peer-name", "pëer-ä".encode())
    assert_error(call(gateway()[0], headers=headers), 401, UNAUTHENTICATED)


def test_invalid_peer_name_is_never_logged(logs: Capture) -> None:
    raw = b'evil"\n{"event":"forged"}\xff' + b"A" * 200
    call(gateway()[0], headers=with_header(b"x-a2a-peer-name", raw))
    [event] = logs.events(events.INBOUND_AUTH_FAILED)
    assert event["peer_name"] is None
    assert len(logs.lines) == 1
    assert "evil" not in logs.lines[0]
    assert "forged" not in logs.lines[0]


def test_secret_misplaced_in_peer_name_is_not_logged(logs: Capture) -> None:
    # The fixture's teardown asserts the secret is in no log line.
    headers = [
        *with_header(b"x-a2a-peer-name", SECRET.encode() + b"!"),
        (b"authorization", b"Bearer " + SECRET.encode()),
    ]
    assert_error(call(gateway()[0], headers=headers), 401, UNAUTHENTICATED)
    assert logs.events(events.INBOUND_AUTH_FAILED)[0]["peer_name"] is None


def test_wrong_secret_for_valid_peer_is_not_logged(logs: Capture) -> None:
    headers = with_header(b"x-api-key", SECRET.encode() + b"-almost")
    assert_error(call(gateway()[0], headers=headers), 401, UNAUTHENTICATED)
    assert "almost" not in "".join(logs.lines)


def test_no_catalog_admits_allowlisted_peer_without_credentials() -> None:
    settings = Settings(gate=PeerGate(frozenset({"peer-a"}), None))
    resp = call(gateway(settings)[0], headers=with_header(b"x-api-key", None))
    assert resp.json["peer"] == "peer-a"


# Step 6: Content-Type


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        b"text/plain",
        b"application/jsonx",
        b"application/json-patch+json",
        b"application/x-www-form-urlencoded",
        b"",
        b"application/json, text/plain",
    ],
)
def test_non_json_content_type_is_415(content_type: bytes | None, logs: Capture) -> None:
    resp = call(gateway()[0], headers=with_header(b"content-type", content_type))
    assert_error(resp, 415, INVALID_REQUEST)
    assert resp.receive_calls == 0
    [event] = logs.events(events.INBOUND_REJECTED)
    assert (event["status"], event["reason"], event["peer_name"]) == (
        415,
        "unsupported_media_type",
        "peer-a",
    )


# Step 7: streamed body ceiling


def test_chunked_body_over_limit_is_413_without_draining(logs: Capture) -> None:
    app, echo = gateway()
    chunks = [b"x" * 40] * 10  # 400 bytes, no Content-Length
    resp = call(app, chunks=chunks, content_length=False)
    assert_error(resp, 413, INVALID_REQUEST)
    assert resp.headers["connection"] == "close"
    assert resp.receive_calls == 2  # stopped at the chunk that crossed the limit
    assert echo.scopes == []
    [event] = logs.events(events.INBOUND_REJECTED)
    assert (event["status"], event["reason"]) == (413, "body_too_large_streamed")


def test_lying_content_length_is_caught_while_streaming() -> None:
    headers = [*GOOD, (b"content-length", b"2")]
    resp = call(gateway()[0], headers=headers, chunks=[b"x" * (LIMIT + 1)], content_length=False)
    assert_error(resp, 413, INVALID_REQUEST)


def test_one_byte_over_limit_is_413() -> None:
    resp = call(gateway()[0], chunks=[b"x" * LIMIT, b"y"], content_length=False)
    assert_error(resp, 413, INVALID_REQUEST)


def test_client_disconnect_while_reading_just_returns() -> None:
    app, echo = gateway()
    sent: list[Message] = []
    messages: list[dict[str, Any]] = [
        {"type": "http.request", "body": b"{", "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/v1/a2a/",
        "raw_path": b"/api/v1/a2a/",
        "headers": GOOD,
    }
    asyncio.run(app(scope, receive, send))
    assert sent == []
    assert messages == []
    assert echo.scopes == []


# Step order


@pytest.mark.parametrize(
    ("method", "headers", "status"),
    [
        # 1 before 2: GET with an oversized declared body
        ("GET", [*GOOD, (b"content-length", b"99999")], 405),
        # 1 before 3: GET without a peer name
        ("GET", with_header(b"x-a2a-peer-name", None), 405),
        # 2 before 3: oversized Content-Length and a bad peer
        (
            "POST",
            [*with_header(b"x-a2a-peer-name", b"bad name"), (b"content-length", b"99999")],
            413,
        ),
        # 3 before 6: bad peer and bad content type
        (
            "POST",
            [
                (b"x-a2a-peer-name", b"bad name"),
                (b"content-type", b"text/plain"),
                (b"content-length", b"2"),
            ],
            401,
        ),
        # 4 before 5: unknown peer with no credential
        (
            "POST",
            [
                (b"x-a2a-peer-name", b"stranger"),
                (b"content-type", b"application/json"),
                (b"content-length", b"2"),
            ],
            403,
        ),
        # 5 before 6: wrong credential and bad content type
        (
            "POST",
            [
                (b"x-a2a-peer-name", b"peer-a"),
                (b"x-api-key", b"no"),
                (b"content-type", b"text/plain"),
                (b"content-length", b"2"),
            ],
            401,
        ),
    ],
)
def test_step_order(method: str, headers: list[tuple[bytes, bytes]], status: int) -> None:
    resp = call(gateway()[0], method=method, headers=headers, content_length=False)
    assert resp.status == status
    assert resp.receive_calls == 0


def test_step_6_before_7() -> None:
    resp = call(
        gateway()[0],
        headers=with_header(b"content-type", b"text/plain"),
        chunks=[b"x" * 1000],
        content_length=False,
    )
    assert resp.status == 415


# The event emitter guarantees the transport relies on


def test_emit_redacts_sensitive_keys(logs: Capture) -> None:
    log.emit(
        "t.redact",
        api_key=SECRET,
        nested={"Authorization": SECRET, "ok": [{"token": 1}]},
        body=b"raw",
        password="p",
        secret="s",
        peer="peer-a",
    )
    [event] = logs.events("t.redact")
    assert event["api_key"] == event["body"] == event["password"] == "[redacted]"
    assert event["nested"] == {"Authorization": "[redacted]", "ok": [{"token": "[redacted]"}]}
    assert event["peer"] == "peer-a"
    assert event["level"] == "info"
    assert event["ts"].endswith("Z")


def test_emit_never_raises(logs: Capture) -> None:
    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("nope")

    cycle: list[object] = []
    cycle.append(cycle)
    log.emit(
        "t.odd",
        level="error",
        obj=object(),
        bad=Unprintable(),
        cycle=cycle,
        keys={(1, 2): "tuple key"},
        ts="field named ts",
    )
    log.emit("t.badlevel", level=42)  # type: ignore[arg-type]
    [event] = logs.events("t.odd")
    assert event["level"] == "error"
    assert event["ts_"] == "field named ts"


def test_configure_logging_is_idempotent() -> None:
    logger, root = logging.getLogger(log.LOGGER_NAME), logging.getLogger()
    before, before_root = list(logger.handlers), list(root.handlers)
    try:
        log.configure_logging("debug")
        log.configure_logging("warning")
        ours = [h for h in logger.handlers if type(h).__name__ == "_EventHandler"]
        assert len(ours) == 1
        assert len([h for h in root.handlers if type(h).__name__ == "_LibraryHandler"]) == 1
        assert logger.level == logging.WARNING
    finally:
        for handler in [h for h in logger.handlers if h not in before]:
            logger.removeHandler(handler)
        for handler in [h for h in root.handlers if h not in before_root]:
            root.removeHandler(handler)
        logging.captureWarnings(False)
