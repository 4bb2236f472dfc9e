"""The gateway endpoint (`synthorg.gateway.endpoint.Gateway`) on a real node, driven in process
through the node's ASGI app: DESIGN §4 steps 0-7, their order, and the hand-off of an admitted
body to the JSON-RPC pipeline (steps 8-12, whose details are `test_rpc.py`'s).

Every refusal up to step 7 is a JSON-RPC error envelope with `id: null`, and nothing of the body
is read before the caller is admitted: each call counts the receive() calls it took.
"""

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
from synthorg.cards.validation import spec_issues
from synthorg.gateway.endpoint import RPC_PATH
from synthorg.generated.models import AdminError
from synthorg.node import Node
from synthorg.observability import log
from synthorg.observability.events import a2a as events
from tests.support.codes import (
    INVALID_REQUEST,
    PARSE_ERROR,
    PEER_NOT_ALLOWED,
    RATE_LIMITED,
    TASK_NOT_FOUND,
    UNAUTHENTICATED,
    UNKNOWN_AGENT,
)

SECRET = "top-secret-credential-value"
BEARER_SECRET = "top-secret-bearer-credential"
ADMIN_TOKEN = "top-secret-admin-token-0123456789"
LIMIT = 1024  # the smallest max_request_body_bytes the config schema allows
CONFIG = f"""\
agents:
  - id: echo
    name: Echo
    executor: {{kind: echo}}
a2a:
  enabled: true
  allowed_peers: [peer-a, peer-b, peer-c, twin, rotating]
  max_request_body_bytes: {LIMIT}
"""
# peer-a: api_key SECRET; peer-b: allowlisted, no catalog record; peer-c: bearer BEARER_SECRET;
# twin: its stored secret is the admin token; rotating: only for the catalog-change test.
GOOD = [
    (b"x-a2a-peer-name", b"peer-a"),
    (b"x-api-key", SECRET.encode()),
    (b"content-type", b"application/json"),
]
NOT_FOUND = {"error": "not_found", "message": "No such path"}
GATEWAY_EVENTS = (events.INBOUND_REJECTED, events.INBOUND_AUTH_FAILED, events.INBOUND_RECEIVED)


def build(data_dir: Path, config: str) -> Node:
    """A real node on a SQLite data dir, with the admin token known to the test."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.yaml").write_text(config)
    with pytest.MonkeyPatch.context() as env:
        env.setenv(TOKEN_ENV, ADMIN_TOKEN)
        node = Node.build(data_dir)
    asyncio.run(node.recover())
    return node


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    built = build(tmp_path_factory.mktemp("node"), CONFIG)
    built.catalog.put("peer-a", "http://127.0.0.1:9", "api_key", SECRET)
    built.catalog.put("peer-c", "http://127.0.0.1:9", "bearer", BEARER_SECRET)
    built.catalog.put("twin", "http://127.0.0.1:9", "api_key", ADMIN_TOKEN)
    yield built
    built.close()


@pytest.fixture(scope="module")
def app(node: Node) -> Any:
    return node.app()


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
    path: str = RPC_PATH,
    headers: list[tuple[bytes, bytes]] | None = None,
    chunks: list[bytes] | None = None,
    content_length: bool = True,
) -> Response:
    """One request through `app`. Chunks are fed one per receive(), then disconnect."""
    chunks = [b"{}"] if chunks is None else chunks
    hdrs = list(GOOD if headers is None else headers)
    if content_length:
        hdrs.append((b"content-length", str(sum(map(len, chunks))).encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": hdrs,
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
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


def with_header(name: bytes, value: bytes | None) -> list[tuple[bytes, bytes]]:
    out = [(k, v) for k, v in GOOD if k != name]
    return out if value is None else [*out, (name, value)]


def rpc(method: str, params: dict[str, Any], request_id: int | str = 1) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    ).encode()


def assert_envelope(resp: Response, status: int, code: int, request_id: Any = None) -> Any:
    """A JSON-RPC error answer: status, code, id (null unless the pipeline read one)."""
    assert resp.status == status, resp.body
    assert resp.headers["content-type"] == "application/json"
    assert int(resp.headers["content-length"]) == len(resp.body)
    doc = resp.json
    assert doc["jsonrpc"] == "2.0"
    assert doc["id"] == request_id
    assert doc["error"]["code"] == code
    assert isinstance(doc["error"]["message"], str)
    assert "result" not in doc
    return doc


def assert_error(resp: Response, status: int, code: int) -> Any:
    return assert_envelope(resp, status, code, None)


def assert_not_found(resp: Response) -> None:
    assert resp.status == 404
    assert resp.json == NOT_FOUND
    assert int(resp.headers["content-length"]) == len(resp.body)


def assert_admitted(resp: Response) -> None:
    """The default body `{}` got past steps 0-7: the pipeline answers it, -32600, id null."""
    assert_envelope(resp, 200, INVALID_REQUEST)


class Capture(logging.Handler):
    """The gateway's own events; every line, the access events too, in `all_lines`."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.all_lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        line = record.getMessage()
        self.all_lines.append(line)
        if '"event": "a2a.inbound.completed"' not in line:
            self.lines.append(line)

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
    for line in capture.all_lines:
        assert "\n" not in line
        json.loads(line)
        assert "top-secret" not in line


# -- admitted requests: the body reaches the JSON-RPC pipeline -----------------------------------


@pytest.mark.parametrize("path", ["/api/v1/a2a", "/api/v1/a2a/"])
def test_admitted_body_reaches_the_pipeline(app: Any, path: str, logs: Capture) -> None:
    resp = call(app, path=path, chunks=[b"{", b"}"])
    assert_admitted(resp)  # `{}` has no id: the pipeline's -32600, not a transport refusal
    assert resp.receive_calls == 2  # the body, and nothing after its last chunk
    assert logs.events(events.INBOUND_REJECTED) == []
    assert logs.events(events.INBOUND_AUTH_FAILED) == []
    [parse] = logs.events(events.JSONRPC_PARSE_ERROR)
    assert parse["peer_name"] == "peer-a"


def test_admitted_call_is_answered_by_its_handler(app: Any, logs: Capture) -> None:
    body = rpc("tasks/get", {"id": "no-such-task"}, request_id=7)
    resp = call(app, chunks=[body[:5], body[5:20], body[20:]])
    assert_envelope(resp, 200, TASK_NOT_FOUND, request_id=7)
    assert resp.receive_calls == 3
    [received] = logs.events(events.INBOUND_RECEIVED)
    assert (received["method"], received["request_id"], received["peer_name"]) == (
        "tasks/get",
        7,
        "peer-a",
    )


def test_admitted_message_send_runs_the_agent(app: Any) -> None:
    message = {
        "kind": "message",
        "messageId": "transport-m-1",
        "role": "user",
        "parts": [{"kind": "text", "text": "hello"}],
    }
    body = rpc("message/send", {"message": message}, request_id="r-1")
    resp = call(app, chunks=[body])
    assert resp.status == 200
    doc = resp.json
    assert doc["id"] == "r-1"
    assert doc["result"]["kind"] == "task"
    assert doc["result"]["metadata"]["agentId"] == "echo"  # the default agent


def test_the_scope_is_not_mutated(app: Any) -> None:
    headers = [*GOOD, (b"content-length", b"2")]
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/v1/a2a",
        "raw_path": b"/api/v1/a2a",
        "query_string": b"",
        "headers": headers,
    }
    before = {**scope, "headers": list(headers)}
    messages = [{"type": "http.request", "body": b"{}", "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 200
    assert scope == before


def padded(body: bytes, size: int) -> bytes:
    assert len(body) <= size
    return body + b" " * (size - len(body))  # JSON allows trailing whitespace


def test_body_exactly_at_limit_is_accepted(app: Any) -> None:
    body = padded(rpc("tasks/get", {"id": "no-such-task"}), LIMIT)
    # the whole body reached the parser: it answers with the id and the handler's error
    assert_envelope(call(app, chunks=[body[:10], body[10:]]), 200, TASK_NOT_FOUND, 1)
    resp = call(app, chunks=[body], content_length=False)
    assert_envelope(resp, 200, TASK_NOT_FOUND, 1)


@pytest.mark.parametrize("content_length", [True, False])
def test_empty_body_reaches_the_pipeline(app: Any, content_length: bool) -> None:
    resp = call(app, chunks=[b""], content_length=content_length)
    assert_error(resp, 200, PARSE_ERROR)  # the parser's answer, not a transport refusal
    assert resp.receive_calls == 1


@pytest.mark.parametrize(
    "content_type",
    [
        b"application/json",
        b"application/json; charset=utf-8",
        b"Application/JSON",
        b"  application/json ;charset=UTF-8",
    ],
)
def test_json_content_types_accepted(app: Any, content_type: bytes) -> None:
    assert_admitted(call(app, headers=with_header(b"content-type", content_type)))


# -- what is not the gateway's -------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/a2ax",
        "/api/v1/a2a/x",
        "/api/v1/a2a//",
        "/api/v1/a2a/agents",
        "/api/v1/a2a/agents/",
        "/api/v1/a2a/agents/echo/x",
    ],
)
@pytest.mark.parametrize("method", ["POST", "GET"])
def test_other_paths_under_the_prefix_are_absent(
    app: Any, path: str, method: str, logs: Capture
) -> None:
    resp = call(app, method=method, path=path, headers=[])  # no credentials: no gate runs
    assert_not_found(resp)
    assert resp.receive_calls == 0
    assert logs.lines == []


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/.well-known/agent-card.json", 200),
        ("POST", "/API/V1/A2A", 404),
        ("POST", "/api/v1/A2A/", 404),
        ("POST", "/", 405),  # GET / points a browser to the console or the docs
    ],
)
def test_other_paths_never_reach_the_gateway(
    app: Any, method: str, path: str, status: int, logs: Capture
) -> None:
    resp = call(app, method=method, path=path, headers=[])
    assert resp.status == status
    assert all(logs.events(name) == [] for name in GATEWAY_EVENTS)


def test_non_http_scopes_never_reach_the_gateway(app: Any) -> None:
    messages = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[dict[str, Any]] = []
    calls = 0

    async def receive() -> dict[str, Any]:
        nonlocal calls
        calls += 1
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app({"type": "lifespan"}, receive, send))
    assert [m["type"] for m in sent] == [
        "lifespan.startup.complete",
        "lifespan.shutdown.complete",
    ]
    sent.clear()
    calls = 0
    scope = {"type": "websocket", "path": RPC_PATH, "raw_path": RPC_PATH.encode(), "headers": GOOD}
    asyncio.run(app(scope, receive, send))
    assert (sent, calls) == ([], 0)


# -- step 0: disabled ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def disabled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    config = CONFIG.replace("enabled: true", "enabled: false")
    built = build(tmp_path_factory.mktemp("disabled"), config)
    built.catalog.put("peer-a", "http://127.0.0.1:9", "api_key", SECRET)
    yield built.app()
    built.close()


@pytest.mark.parametrize("path", ["/api/v1/a2a", "/api/v1/a2a/", "/api/v1/a2a/agents/echo/"])
@pytest.mark.parametrize("method", ["POST", "GET"])
@pytest.mark.parametrize("credentials", [True, False])
def test_disabled_gateway_routes_are_absent(
    disabled: Any, path: str, method: str, credentials: bool, logs: Capture
) -> None:
    resp = call(disabled, method=method, path=path, headers=None if credentials else [])
    assert_not_found(resp)
    assert resp.receive_calls == 0
    assert logs.lines == []  # no gate ran, nothing was refused: the route is simply not there


def test_disabled_gateway_leaves_the_rest_of_the_node_up(disabled: Any) -> None:
    assert call(disabled, method="GET", path="/openapi.json", headers=[]).status == 200


# -- what stays live: the catalog (config.yaml settings are fixed at start) ----------------------


def test_catalog_changes_apply_to_the_next_request(node: Node, app: Any) -> None:
    def as_rotating(key: str) -> Response:
        headers = [(b"x-a2a-peer-name", b"rotating"), (b"x-api-key", key.encode())]
        return call(app, headers=[*headers, (b"content-type", b"application/json")])

    first, second = "top-secret-rotating-1", "top-secret-rotating-2"
    assert_error(as_rotating(first), 401, UNAUTHENTICATED)  # no record yet
    node.catalog.put("rotating", "http://127.0.0.1:9", "api_key", first)
    assert_admitted(as_rotating(first))
    node.catalog.put("rotating", "http://127.0.0.1:9", "api_key", second)
    assert_error(as_rotating(first), 401, UNAUTHENTICATED)
    assert_admitted(as_rotating(second))
    node.catalog.remove("rotating")
    assert_error(as_rotating(second), 401, UNAUTHENTICATED)


def test_a_store_failure_in_the_gate_fails_closed(tmp_path: Path, logs: Capture) -> None:
    broken = build(tmp_path, CONFIG)
    broken.catalog.put("peer-a", "http://127.0.0.1:9", "api_key", SECRET)
    app = broken.app()
    broken.close()  # the catalog can no longer be read
    resp = call(app)
    assert_error(resp, 401, UNAUTHENTICATED)  # refused: neither admitted nor a 500
    assert resp.receive_calls == 0
    [event] = logs.events(events.INBOUND_AUTH_FAILED)
    assert (event["reason"], event["peer_name"]) == ("catalog_error", "peer-a")


# -- step 1: method --------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "post"])
def test_non_post_is_405(app: Any, method: str, logs: Capture) -> None:
    resp = call(app, method=method)
    assert_error(resp, 405, INVALID_REQUEST)
    assert resp.headers["allow"] == "POST"
    assert resp.receive_calls == 0
    [event] = logs.events(events.INBOUND_REJECTED)
    assert (event["status"], event["reason"], event["path"], event["level"]) == (
        405,
        "method_not_allowed",
        RPC_PATH,
        "warning",
    )


def test_405_logs_a_clipped_method(app: Any, logs: Capture) -> None:
    call(app, method='X"\n{"event":"forged"}' + "M" * 200)
    [event] = logs.events(events.INBOUND_REJECTED)
    assert event["method"] == 'X????event???forged??' + "M" * 43  # clipped, neutralised
    assert len(logs.lines) == 1


# -- step 2: declared Content-Length -------------------------------------------------------------


def test_declared_length_over_limit_is_413(app: Any, logs: Capture) -> None:
    headers = [*GOOD, (b"content-length", str(LIMIT + 1).encode())]
    resp = call(app, headers=headers, chunks=[b"x" * (LIMIT + 1)], content_length=False)
    assert_error(resp, 413, INVALID_REQUEST)
    assert resp.headers["connection"] == "close"
    assert resp.receive_calls == 0
    [event] = logs.events(events.INBOUND_REJECTED)
    assert (event["status"], event["reason"], event["declared"], event["limit"]) == (
        413,
        "body_too_large",
        LIMIT + 1,
        LIMIT,
    )


def test_absurd_declared_length_is_413_not_a_crash(app: Any) -> None:
    headers = [*GOOD, (b"content-length", b"9" * 5000)]
    resp = call(app, headers=headers, content_length=False)
    assert_error(resp, 413, INVALID_REQUEST)
    assert resp.receive_calls == 0


@pytest.mark.parametrize(
    "value", [b"abc", b"-1", b"+5", b"1_0", b"1.5", b"", b"0x10", b"5, 5", b"\xd9\xa3"]
)
def test_invalid_content_length_is_400(app: Any, value: bytes, logs: Capture) -> None:
    headers = [*GOOD, (b"content-length", value)]
    resp = call(app, headers=headers, content_length=False)
    assert_error(resp, 400, INVALID_REQUEST)
    assert resp.receive_calls == 0
    [event] = logs.events(events.INBOUND_REJECTED)
    assert (event["status"], event["reason"]) == (400, "invalid_content_length")


def test_duplicate_content_length_headers_are_400(app: Any) -> None:
    headers = [*GOOD, (b"content-length", b"2"), (b"content-length", b"2")]
    resp = call(app, headers=headers, content_length=False)
    assert_error(resp, 400, INVALID_REQUEST)
    assert resp.receive_calls == 0


# -- steps 3-5: the gates, on headers only, before any body byte is read -------------------------


@pytest.mark.parametrize(
    ("headers", "status", "code", "reason", "peer"),
    [
        # No name and a key that names no peer (the key alone names its peer: see
        # tests/integration/test_one_credential.py).
        (
            [(k, v) for k, v in with_header(b"x-a2a-peer-name", None) if k != b"x-api-key"]
            + [(b"x-api-key", b"names-no-one-0000")],
            401, UNAUTHENTICATED, "missing_peer_name", None,
        ),
        (
            with_header(b"x-a2a-peer-name", b"not a name"),
            401,
            UNAUTHENTICATED,
            "invalid_peer_name",
            None,
        ),
        (
            with_header(b"x-a2a-peer-name", b"stranger"),
            403,
            PEER_NOT_ALLOWED,
            "peer_not_allowed",
            "stranger",
        ),
        (
            with_header(b"x-a2a-peer-name", b"peer-b"),
            401,
            UNAUTHENTICATED,
            "no_credential_record",
            "peer-b",
        ),
        (with_header(b"x-api-key", None), 401, UNAUTHENTICATED, "missing_credential", "peer-a"),
        (with_header(b"x-api-key", b"   "), 401, UNAUTHENTICATED, "missing_credential", "peer-a"),
        (with_header(b"x-api-key", b"wrong"), 401, UNAUTHENTICATED, "credential_mismatch",
         "peer-a"),
        (
            with_header(b"x-api-key", b"\xff\xfe\x00garbage"),
            401,
            UNAUTHENTICATED,
            "credential_mismatch",
            "peer-a",
        ),
        (
            [*GOOD, (b"authorization", b"Bearer " + ADMIN_TOKEN.encode())],
            401,
            UNAUTHENTICATED,
            "admin_token_presented",
            "peer-a",
        ),
        (
            [
                (b"x-a2a-peer-name", b"twin"),
                (b"x-api-key", ADMIN_TOKEN.encode()),
                (b"content-type", b"application/json"),
            ],
            401,
            UNAUTHENTICATED,
            "admin_token_presented",
            "twin",
        ),
    ],
)
def test_gate_refusals(
    app: Any,
    headers: list[tuple[bytes, bytes]],
    status: int,
    code: int,
    reason: str,
    peer: str | None,
    logs: Capture,
) -> None:
    resp = call(app, headers=headers, chunks=[b'{"big": "body"}'])
    assert_error(resp, status, code)
    assert resp.receive_calls == 0  # the body was never touched
    [event] = logs.events(events.INBOUND_AUTH_FAILED)
    assert (event["reason"], event["status"], event["path"]) == (reason, status, RPC_PATH)
    assert event["level"] == "warning"
    assert event["peer_name"] == peer
    assert logs.events(events.INBOUND_RECEIVED) == []


@pytest.mark.parametrize(
    "authorization",
    [
        b"Bearer\xc2\xa0" + ADMIN_TOKEN.encode(),  # NBSP as the separator
        b"Bearer " + ADMIN_TOKEN.encode() + b"\xc2\xa0",  # trailing NBSP
        b"Bearer\xc2\x85" + ADMIN_TOKEN.encode(),  # NEL as the separator
    ],
)
def test_the_admin_token_never_passes_however_the_bearer_is_spaced(
    app: Any, authorization: bytes
) -> None:
    headers = [
        (b"x-a2a-peer-name", b"twin"),  # its stored secret is the admin token
        (b"authorization", authorization),
        (b"content-type", b"application/json"),
    ]
    assert_error(call(app, headers=headers), 401, UNAUTHENTICATED)


def test_gate_messages_do_not_say_which_credential_check_failed(app: Any) -> None:
    messages = {
        call(app, headers=headers).json["error"]["message"]
        for headers in (
            with_header(b"x-a2a-peer-name", b"peer-b"),  # no record
            with_header(b"x-api-key", None),  # missing
            with_header(b"x-api-key", b"wrong"),  # mismatch
            [*GOOD, (b"authorization", b"Bearer " + ADMIN_TOKEN.encode())],  # admin token
        )
    }
    assert len(messages) == 1


@pytest.mark.parametrize("scheme", [b"Bearer ", b"bEaReR ", b"  bearer   "])
def test_gate_reads_bearer_from_raw_headers(app: Any, scheme: bytes) -> None:
    headers = [*with_header(b"x-api-key", None), (b"authorization", scheme + SECRET.encode())]
    assert_admitted(call(app, headers=headers))


def test_bearer_scheme_peer_must_use_authorization(app: Any, logs: Capture) -> None:
    peer_c = [(b"x-a2a-peer-name", b"peer-c"), (b"content-type", b"application/json")]
    with_key = [*peer_c, (b"x-api-key", BEARER_SECRET.encode())]
    assert_error(call(app, headers=with_key), 401, UNAUTHENTICATED)
    assert logs.events(events.INBOUND_AUTH_FAILED)[0]["reason"] == "missing_credential"
    bearer = [*peer_c, (b"authorization", b"Bearer " + BEARER_SECRET.encode())]
    assert_admitted(call(app, headers=bearer))


@pytest.mark.parametrize("name", [b"PEER-A", b"  Peer-A "])
def test_peer_names_are_canonicalised(app: Any, name: bytes) -> None:
    assert_admitted(call(app, headers=with_header(b"x-a2a-peer-name", name)))


def test_header_names_are_matched_case_insensitively(app: Any) -> None:
    headers = [(k.upper(), v) for k, v in GOOD]
    assert_admitted(call(app, headers=headers))


@pytest.mark.parametrize(
    "extra",
    [
        (b"x-api-key", b"other"),
        (b"x-api-key", SECRET.encode()),  # even the same value twice: one header, one value
        (b"x-a2a-peer-name", b"peer-a"),
        (b"x-a2a-peer-name", b"peer-c"),
    ],
)
def test_duplicate_gate_headers_are_refused(
    app: Any, extra: tuple[bytes, bytes], logs: Capture
) -> None:
    resp = call(app, headers=[*GOOD, extra])
    assert_error(resp, 401, UNAUTHENTICATED)
    assert resp.receive_calls == 0
    [event] = logs.events(events.INBOUND_AUTH_FAILED)
    assert event["reason"] in {"invalid_peer_name", "credential_mismatch"}


def test_duplicate_authorization_headers_are_refused(app: Any) -> None:
    bearer = (b"authorization", b"Bearer " + SECRET.encode())
    headers = [*with_header(b"x-api-key", None), bearer, bearer]
    assert_error(call(app, headers=headers), 401, UNAUTHENTICATED)


def test_utf8_peer_name_header_is_refused_without_crash(app: Any) -> None:
    headers = with_header(b"x-a2a-peer-name", "pëer-ä".encode())
    assert_error(call(app, headers=headers), 401, UNAUTHENTICATED)


def test_invalid_peer_name_is_never_logged(app: Any, logs: Capture) -> None:
    raw = b'evil"\n{"event":"forged"}\xff' + b"A" * 200
    call(app, headers=with_header(b"x-a2a-peer-name", raw))
    [event] = logs.events(events.INBOUND_AUTH_FAILED)
    assert event["peer_name"] is None
    assert len(logs.lines) == 1
    assert "evil" not in logs.lines[0]
    assert "forged" not in logs.lines[0]


def test_secret_misplaced_in_peer_name_is_not_logged(app: Any, logs: Capture) -> None:
    # The fixture's teardown asserts no secret is in any log line.
    headers = [
        *with_header(b"x-a2a-peer-name", SECRET.encode() + b"!"),
        (b"authorization", b"Bearer " + SECRET.encode()),
    ]
    assert_error(call(app, headers=headers), 401, UNAUTHENTICATED)
    assert logs.events(events.INBOUND_AUTH_FAILED)[0]["peer_name"] is None


def test_wrong_secret_for_valid_peer_is_not_logged(app: Any, logs: Capture) -> None:
    headers = with_header(b"x-api-key", SECRET.encode() + b"-almost")
    assert_error(call(app, headers=headers), 401, UNAUTHENTICATED)
    assert "almost" not in "".join(logs.lines)


@pytest.fixture(scope="module")
def fail_open(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    config = CONFIG + "  dev_allow_without_catalog: true\n"
    built = build(tmp_path_factory.mktemp("fail-open"), config)
    built.catalog.put("peer-a", "http://127.0.0.1:9", "api_key", SECRET)
    yield built.app()
    built.close()


def test_no_catalog_admits_allowlisted_peer_without_credentials(fail_open: Any) -> None:
    assert_admitted(call(fail_open, headers=with_header(b"x-api-key", None)))
    assert_admitted(call(fail_open, headers=with_header(b"x-api-key", b"anything")))
    stranger = with_header(b"x-a2a-peer-name", b"stranger")
    assert_error(call(fail_open, headers=stranger), 403, PEER_NOT_ALLOWED)
    headers = with_header(b"x-api-key", ADMIN_TOKEN.encode())  # still never a peer credential
    assert_error(call(fail_open, headers=headers), 401, UNAUTHENTICATED)


# -- step 6: Content-Type ------------------------------------------------------------------------


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
def test_non_json_content_type_is_415(
    app: Any, content_type: bytes | None, logs: Capture
) -> None:
    resp = call(app, headers=with_header(b"content-type", content_type))
    assert_error(resp, 415, INVALID_REQUEST)
    assert resp.receive_calls == 0
    [event] = logs.events(events.INBOUND_REJECTED)
    assert (event["status"], event["reason"], event["peer_name"]) == (
        415,
        "unsupported_media_type",
        "peer-a",
    )


def test_duplicate_content_type_headers_are_415(app: Any) -> None:
    headers = [*GOOD, (b"content-type", b"application/json")]
    assert_error(call(app, headers=headers), 415, INVALID_REQUEST)


# -- step 7: streamed body ceiling -----------------------------------------------------------------


def test_chunked_body_over_limit_is_413_without_draining(app: Any, logs: Capture) -> None:
    chunks = [b"x" * 600] * 10  # 6000 bytes, no Content-Length
    resp = call(app, chunks=chunks, content_length=False)
    assert_error(resp, 413, INVALID_REQUEST)
    assert resp.headers["connection"] == "close"
    assert resp.receive_calls == 2  # stopped at the chunk that crossed the limit
    [event] = logs.events(events.INBOUND_REJECTED)
    assert (event["status"], event["reason"], event["peer_name"], event["limit"]) == (
        413,
        "body_too_large_streamed",
        "peer-a",
        LIMIT,
    )
    assert logs.events(events.INBOUND_RECEIVED) == []  # never reached the pipeline


def test_lying_content_length_is_caught_while_streaming(app: Any) -> None:
    headers = [*GOOD, (b"content-length", b"2")]
    chunks = [b"x" * 1000, b"x" * 1000, b"x" * 1000]
    resp = call(app, headers=headers, chunks=chunks, content_length=False)
    assert_error(resp, 413, INVALID_REQUEST)
    assert resp.headers["connection"] == "close"
    assert resp.receive_calls == 2


def test_one_byte_over_limit_is_413(app: Any) -> None:
    resp = call(app, chunks=[b"x" * LIMIT, b"y"], content_length=False)
    assert_error(resp, 413, INVALID_REQUEST)
    assert resp.receive_calls == 2
    resp = call(app, chunks=[b"x" * (LIMIT + 1)], content_length=False)
    assert_error(resp, 413, INVALID_REQUEST)


@pytest.mark.parametrize(
    "messages",
    [
        [{"type": "http.request", "body": b"{", "more_body": True}, {"type": "http.disconnect"}],
        [{"type": "http.disconnect"}],
    ],
)
def test_client_disconnect_while_reading_just_returns(
    app: Any, messages: list[dict[str, Any]], logs: Capture
) -> None:
    sent: list[dict[str, Any]] = []
    pending = list(messages)

    async def receive() -> dict[str, Any]:
        return pending.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": RPC_PATH,
        "raw_path": RPC_PATH.encode(),
        "query_string": b"",
        "headers": GOOD,
    }
    asyncio.run(app(scope, receive, send))
    assert sent == []
    assert pending == []  # read up to the disconnect, and no further
    assert logs.events(events.INBOUND_RECEIVED) == []


# -- step order ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "headers", "status"),
    [
        # 1 before 2: GET with an oversized declared body
        ("GET", [*GOOD, (b"content-length", b"99999")], 405),
        # 1 before 2: GET with an ill-formed declared body
        ("GET", [*GOOD, (b"content-length", b"nope")], 405),
        # 1 before 3: GET without a peer name
        ("GET", with_header(b"x-a2a-peer-name", None), 405),
        # 2 before 3: oversized Content-Length and a bad peer
        (
            "POST",
            [*with_header(b"x-a2a-peer-name", b"bad name"), (b"content-length", b"99999")],
            413,
        ),
        # 2 before 3: ill-formed Content-Length and no credentials at all
        ("POST", [(b"content-length", b"-1")], 400),
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
def test_step_order(
    app: Any, method: str, headers: list[tuple[bytes, bytes]], status: int
) -> None:
    resp = call(app, method=method, headers=headers, content_length=False)
    assert resp.status == status
    assert resp.json["id"] is None
    assert resp.receive_calls == 0


def test_step_6_before_7(app: Any) -> None:
    resp = call(
        app,
        headers=with_header(b"content-type", b"text/plain"),
        chunks=[b"x" * (LIMIT * 4)],
        content_length=False,
    )
    assert_error(resp, 415, INVALID_REQUEST)
    assert resp.receive_calls == 0


# -- each refusal in the caller's dialect ------------------------------------------------------

V1 = (b"a2a-version", b"1.0")
RATE_LIMITED_CONFIG = CONFIG + "  peer_rate_limit_per_second: 0.001\n  peer_rate_limit_burst: 1\n"


def error_info(resp: Response, status: int, code: int, reason: str) -> None:
    """A refusal in 1.0's shape: its error.data the 1.0 details array (a google.rpc
    ErrorInfo naming the error), as the spec's JsonRpcErrorResponse allows."""
    doc = assert_error(resp, status, code)
    assert doc["error"]["data"] == [{
        "@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason,
        "domain": "synthorg",
    }]
    assert spec_issues(doc, "JsonRpcErrorResponse") == []


@pytest.mark.parametrize(
    ("method", "headers", "chunks", "path", "status", "code", "reason"),
    [
        ("GET", GOOD, [b"{}"], RPC_PATH, 405, INVALID_REQUEST, "INVALID_REQUEST"),
        ("POST", [*GOOD, (b"content-length", b"abc")], [b"{}"], RPC_PATH, 400, INVALID_REQUEST,
         "INVALID_REQUEST"),
        ("POST", [*GOOD, (b"content-length", str(LIMIT + 1).encode())], [b"x" * (LIMIT + 1)],
         RPC_PATH, 413, INVALID_REQUEST, "INVALID_REQUEST"),
        ("POST", GOOD, [b"x" * LIMIT, b"x"], RPC_PATH, 413, INVALID_REQUEST, "INVALID_REQUEST"),
        ("POST", with_header(b"x-api-key", b"wrong"), [b"{}"], RPC_PATH, 401, UNAUTHENTICATED,
         "UNAUTHENTICATED"),
        ("POST", with_header(b"x-a2a-peer-name", b"stranger"), [b"{}"], RPC_PATH, 403,
         PEER_NOT_ALLOWED, "PEER_NOT_ALLOWED"),
        ("POST", GOOD, [b"{}"], f"{RPC_PATH}agents/nobody/", 404, UNKNOWN_AGENT,
         "UNKNOWN_AGENT"),
        ("POST", GOOD, [b"{}"], f"{RPC_PATH}agents/No!/", 404, UNKNOWN_AGENT, "UNKNOWN_AGENT"),
    ],
    ids=["405", "400", "413-declared", "413-streamed", "401", "403", "404", "404-malformed"],
)
def test_refusals_answer_a_1_0_caller_in_1_0s_error_shape_and_others_in_0_3s(
    app: Any, method: str, headers: list[tuple[bytes, bytes]], chunks: list[bytes], path: str,
    status: int, code: int, reason: str,
) -> None:
    sized = any(name == b"content-length" for name, _ in headers)
    v1 = call(app, method=method, path=path, headers=[*headers, V1], chunks=chunks,
              content_length=not sized)
    error_info(v1, status, code, reason)
    old = call(app, method=method, path=path, headers=headers, chunks=chunks,
               content_length=not sized)
    assert "data" not in assert_error(old, status, code)["error"]


def test_a_rate_limited_1_0_caller_gets_1_0s_error_shape(tmp_path: Path) -> None:
    limited = build(tmp_path, RATE_LIMITED_CONFIG)
    try:
        limited.catalog.put("peer-a", "http://127.0.0.1:9", "api_key", SECRET)
        app = limited.app()
        assert_admitted(call(app, headers=[*GOOD, V1]))  # the burst: one request
        refused = call(app, headers=[*GOOD, V1])
        error_info(refused, 429, RATE_LIMITED, "RATE_LIMITED")
        assert "retry-after" in refused.headers
        assert "data" not in assert_error(call(app), 429, RATE_LIMITED)["error"]
    finally:
        limited.close()


# -- the event emitter guarantees the gateway relies on ------------------------------------------


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
    assert event["secret"] == "[redacted]"
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
    old_level = logger.level
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
        logger.setLevel(old_level)
        for handler in [h for h in root.handlers if h not in before_root]:
            root.removeHandler(handler)
        logging.captureWarnings(False)


@pytest.mark.parametrize(("method", "path", "allow"), [
    ("POST", "/healthz", "GET"),
    ("DELETE", "/readyz", "GET"),
    ("PUT", "/.well-known/agent-card.json", "GET"),
    ("POST", "/.well-known/jwks.json", "GET"),
    ("GET", "/api/v1/webhooks/peer-a/a2a_push", "POST"),
])
def test_a_method_a_served_path_does_not_take_is_an_admin_error(
    app: Any, method: str, path: str, allow: str
) -> None:
    """405 with Allow and the spec's AdminError (NotAllowedHere), on the paths outside the
    JSON-RPC and admin trees (those answer their own refusals)."""
    resp = call(app, method=method, path=path, headers=[], chunks=[b""])
    assert resp.status == 405 and resp.headers["allow"] == allow
    assert AdminError.model_validate_json(resp.body).error == "method_not_allowed"


def test_an_unknown_path_is_an_admin_error(app: Any) -> None:
    resp = call(app, method="GET", path="/no/such/path", headers=[], chunks=[b""])
    assert_not_found(resp)
    assert AdminError.model_validate_json(resp.body) == AdminError(**NOT_FOUND)
