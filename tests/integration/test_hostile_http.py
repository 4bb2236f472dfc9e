"""Hostile and broken HTTP clients against a live node: the `server:` limits of config.yaml.

Raw sockets on loopback, so each test controls exactly what reaches the node and when: heads
over the size caps, heads and bodies that trickle in, connections that say nothing, more
connections than the node holds, and garbage. Timeouts are configured small (about a second) so
the tests are quick; every wait is on a socket or on the node's event stream, with a deadline,
never a sleep. Refusals must be JSON-RPC error envelopes (-32600, id null) with
`Connection: close`, after which the node closes the connection, and each must be reported as
`a2a.inbound.rejected` without any of the request's header contents.
"""

from __future__ import annotations

import contextlib
import json
import re
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    JSON,
    RPC_PATH,
    RawResponse,
    envelope,
    expect_error,
)
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

PEER, KEY = "peer-slow", "key-slow-3c9e1a7b5d2f"
MAX_HEADER_BYTES = 4096
MAX_HEADER_COUNT = 20
HEADER_TIMEOUT = 1.0
BODY_TIMEOUT = 1.0
KEEPALIVE_TIMEOUT = 0.5
# A timer may not fire early; how late it may fire on a loaded machine.
LATE = 3.0
CARD_PATH = "/.well-known/agent-card.json"
ADMIN_PATH = "/api/v1/admin/settings"
MARKER = "HEADER-MARKER-LEAKCHECK-5b7d"

HOSTILE_CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{PEER}]
server:
  max_header_bytes: {MAX_HEADER_BYTES}
  max_header_count: {MAX_HEADER_COUNT}
  header_timeout_seconds: {HEADER_TIMEOUT}
  body_timeout_seconds: {BODY_TIMEOUT}
  keepalive_timeout_seconds: {KEEPALIVE_TIMEOUT}
"""


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir: Path = tmp_path_factory.mktemp("hostile")
    add_peer(data_dir, PEER, KEY)
    with LiveNode(data_dir, HOSTILE_CONFIG) as live:
        yield live


# -- a raw HTTP/1.1 client --------------------------------------------------------------------


class Conn:
    """One TCP connection; reads are framed by Content-Length and bounded by deadlines."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.opened = time.monotonic()
        self.buffer = b""
        self.at_eof = False

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> bool:
        """False once the node has stopped reading (reset or closed)."""
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            return False
        return True

    def readable(self, timeout: float) -> bool:
        return bool(self.buffer) or bool(select.select([self.sock], [], [], timeout)[0])

    def _fill(self, deadline: float) -> bool:
        """Read once; False at EOF (or reset)."""
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([self.sock], [], [], remaining)[0]:
            raise AssertionError(f"nothing from the node in time; have {self.buffer[:200]!r}")
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.at_eof = True
            return False
        self.buffer += chunk
        return True

    def response(self, timeout: float = 10.0) -> RawResponse:
        deadline = time.monotonic() + timeout
        while True:
            head, sep, rest = self.buffer.partition(b"\r\n\r\n")
            if sep:
                status_line, *lines = head.decode("latin-1").split("\r\n")
                headers: dict[str, str] = {}
                for line in lines:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                if len(rest) >= length:
                    self.buffer = rest[length:]
                    return RawResponse(int(status_line.split()[1]), headers, rest[:length])
            if not self._fill(deadline):
                raise AssertionError(f"connection closed mid-response: {self.buffer[:300]!r}")

    def eof(self, timeout: float = 10.0) -> float:
        """Wait for the node to close; the seconds since the connection opened. No more bytes."""
        deadline = time.monotonic() + timeout
        while not self.at_eof:
            self._fill(deadline)
        assert self.buffer == b"", f"bytes after the answer: {self.buffer[:200]!r}"
        return time.monotonic() - self.opened

    def trickle(self, data: bytes, interval: float, deadline: float) -> bool:
        """Send `data` a byte at a time, one byte per `interval`, until the node answers (or
        stops reading) or `deadline`; True when the node answered before `data` ran out."""
        for index in range(len(data)):
            if not self.send(data[index : index + 1]):
                return True
            if self.readable(min(interval, max(0.0, deadline - time.monotonic()))):
                return True
            if time.monotonic() >= deadline:
                return False
        return False


@contextlib.contextmanager
def connect(port: int) -> Iterator[Conn]:
    conn = Conn(port)
    try:
        yield conn
    finally:
        conn.close()


def head(
    path: str = CARD_PATH,
    method: str = "GET",
    headers: list[tuple[str, str]] | None = None,
    end: bool = True,
) -> bytes:
    fields = (f"{name}: {value}" for name, value in headers or [])
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *fields]
    return ("\r\n".join(lines) + "\r\n" + ("\r\n" if end else "")).encode("latin-1")


def peer_post_head(length: int) -> bytes:
    return head(
        RPC_PATH,
        "POST",
        [
            ("X-A2A-Peer-Name", PEER),
            ("X-API-Key", KEY),
            ("Content-Type", JSON),
            ("Content-Length", str(length)),
        ],
    )


def expect_refusal(response: RawResponse, status: int) -> str:
    """A refusal on the wire: the JSON-RPC envelope (-32600, id null) and Connection: close."""
    error = expect_error(response, code=INVALID_REQUEST, status=status, request_id=None)
    assert response.headers.get("connection") == "close"
    return str(error["message"])


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process, in KiB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


REJECTED = "a2a.inbound.rejected"


class Rejections:
    """The `a2a.inbound.rejected` events written since a test began. Every test that causes
    one waits here for it, so the next test starts counting after it."""

    def __init__(self, node: LiveNode) -> None:
        self.node = node
        self.start = len(node.events(REJECTED))

    def expect(self, reason: str, status: int | None) -> dict[str, Any]:
        events = self.node.wait_for_events(REJECTED, self.start + 1)[self.start :]
        assert [(e["reason"], e["status"]) for e in events] == [(reason, status)], events
        assert set(events[0]) == {"ts", "level", "event", "reason", "status", "limit", "client"}
        assert events[0]["client"] == "127.0.0.1"
        return events[0]


@pytest.fixture
def rejections(node: LiveNode) -> Rejections:
    return Rejections(node)


# -- header size ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [CARD_PATH, RPC_PATH, ADMIN_PATH, "/no/such/path"])
def test_a_head_over_the_byte_cap_is_answered_431_and_closed(
    node: LiveNode, rejections: Rejections, path: str
) -> None:
    with connect(node.port) as conn:
        conn.send(head(path, headers=[("X-Marker", MARKER * (MAX_HEADER_BYTES // len(MARKER)))]))
        message = expect_refusal(conn.response(), 431)
        assert str(MAX_HEADER_BYTES) in message
        conn.eof()
    assert rejections.expect("header_too_large", 431)["limit"] == MAX_HEADER_BYTES
    assert not any(MARKER in line for line in node.lines)


def test_an_over_long_request_line_is_answered_431(
    node: LiveNode, rejections: Rejections
) -> None:
    with connect(node.port) as conn:
        conn.send(head("/" + "a" * MAX_HEADER_BYTES))
        expect_refusal(conn.response(), 431)
        conn.eof()
    rejections.expect("header_too_large", 431)


def test_too_many_header_fields_are_answered_431_and_closed(
    node: LiveNode, rejections: Rejections
) -> None:
    fields = [(f"X-{MARKER}-{i}", "1") for i in range(MAX_HEADER_COUNT)]  # plus Host
    with connect(node.port) as conn:
        conn.send(head(headers=fields))
        message = expect_refusal(conn.response(), 431)
        assert str(MAX_HEADER_COUNT) in message
        conn.eof()
    assert rejections.expect("too_many_headers", 431)["limit"] == MAX_HEADER_COUNT
    assert not any(MARKER in line for line in node.lines)


def test_heads_under_the_caps_and_bodies_over_them_are_served(node: LiveNode) -> None:
    """The caps are on the head only: a full head in many small reads, or a body much larger
    than the cap arriving in the same read as its head, is not refused."""
    fields = [(f"X-Field-{i}", "v" * 100) for i in range(MAX_HEADER_COUNT - 2)]
    with connect(node.port) as conn:
        data = head(headers=fields)
        assert len(data) < MAX_HEADER_BYTES
        for start in range(0, len(data), 512):
            conn.send(data[start : start + 512])
        assert conn.response().status_code == 200
        body = json.dumps(envelope("tasks/get", {"id": "x" * (4 * MAX_HEADER_BYTES)})).encode()
        conn.send(peer_post_head(len(body)) + body)
        # Read whole and judged by the JSON-RPC layer: the id is over 128 characters.
        expect_error(conn.response(), code=INVALID_PARAMS, request_id=1)


def test_a_200_mib_header_value_is_refused_early_and_costs_no_memory(
    node: LiveNode, rejections: Rejections
) -> None:
    assert node.proc is not None
    pid = node.proc.pid
    rss_before, peak_before = rss_kib(pid)
    chunk = b"a" * 65536
    total = 200 * 1024 * 1024
    sent = 0
    deadline = time.monotonic() + 60
    with connect(node.port) as conn:
        conn.send(head(RPC_PATH, "POST", end=False) + b"X-Huge: ")
        answered = False
        while sent < total and time.monotonic() < deadline:
            if conn.readable(0):
                answered = True
                break
            if not conn.send(chunk):
                answered = True
                break
            sent += len(chunk)
        assert answered, f"no answer after {sent} bytes of one header value"
        # Refused at the cap, give or take what the sockets' buffers held by then.
        assert sent < 32 * 1024 * 1024, sent
        expect_refusal(conn.response(), 431)
        conn.eof()
    rss_after, peak_after = rss_kib(pid)
    assert rss_after - rss_before < 4 * 1024, (rss_before, rss_after)
    assert peak_after - peak_before < 8 * 1024, (peak_before, peak_after)
    rejections.expect("header_too_large", 431)


def test_a_pipelined_request_is_answered_before_the_refusal_of_the_next(
    node: LiveNode, rejections: Rejections
) -> None:
    with connect(node.port) as conn:
        conn.send(head() + head(headers=[("X-Big", "b" * MAX_HEADER_BYTES)]))
        assert conn.response().status_code == 200
        expect_refusal(conn.response(), 431)
        conn.eof()
    rejections.expect("header_too_large", 431)


# -- time -------------------------------------------------------------------------------------


def test_a_connection_that_sends_nothing_is_answered_408_after_the_header_timeout(
    node: LiveNode, rejections: Rejections
) -> None:
    with connect(node.port) as conn:
        expect_refusal(conn.response(timeout=HEADER_TIMEOUT + LATE), 408)
        elapsed = conn.eof()
    assert HEADER_TIMEOUT * 0.95 <= elapsed < HEADER_TIMEOUT + LATE
    assert rejections.expect("header_timeout", 408)["limit"] == HEADER_TIMEOUT


def test_headers_trickled_in_are_cut_off_at_the_header_timeout(
    node: LiveNode, rejections: Rejections
) -> None:
    """Bytes arriving do not reset the clock: a byte every 0.1 s still ends at the timeout."""
    data = head(headers=[(f"X-{MARKER}", "slow" * 50)])
    with connect(node.port) as conn:
        deadline = conn.opened + HEADER_TIMEOUT + LATE
        assert conn.trickle(data, 0.1, deadline), "the node waited for the whole slow head"
        expect_refusal(conn.response(), 408)
        elapsed = conn.eof()
    assert HEADER_TIMEOUT * 0.95 <= elapsed < HEADER_TIMEOUT + LATE
    rejections.expect("header_timeout", 408)
    assert not any(MARKER in line for line in node.lines)


def test_a_body_trickled_in_is_cut_off_at_the_body_timeout(
    node: LiveNode, rejections: Rejections
) -> None:
    body = json.dumps(envelope("tasks/get", {"id": "slow-body"})).encode()
    with connect(node.port) as conn:
        conn.send(peer_post_head(len(body)))
        headers_done = time.monotonic()
        deadline = headers_done + BODY_TIMEOUT + LATE
        assert conn.trickle(body, 0.1, deadline), "the node waited for the whole slow body"
        expect_refusal(conn.response(), 408)
        conn.eof()
        elapsed = time.monotonic() - headers_done
    assert BODY_TIMEOUT * 0.95 <= elapsed < BODY_TIMEOUT + LATE
    assert rejections.expect("body_timeout", 408)["limit"] == BODY_TIMEOUT


def test_an_idle_kept_alive_connection_is_closed_after_the_keepalive_timeout(
    node: LiveNode,
) -> None:
    with connect(node.port) as conn:
        conn.send(head())
        response = conn.response()
        assert response.status_code == 200
        assert response.headers.get("connection") != "close"
        answered = time.monotonic()
        conn.eof(timeout=KEEPALIVE_TIMEOUT + LATE)  # closed without a word
        idle = time.monotonic() - answered
    assert KEEPALIVE_TIMEOUT * 0.9 <= idle < KEEPALIVE_TIMEOUT + LATE


def test_a_kept_alive_connection_serves_request_after_request(node: LiveNode) -> None:
    with connect(node.port) as conn:
        for _ in range(5):
            conn.send(head())
            assert conn.response().status_code == 200


# -- connection count -------------------------------------------------------------------------


CROWDED_HEADER_TIMEOUT = 3.0
CROWDED_CONFIG = f"""\
a2a:
  enabled: true
server:
  max_connections: 3
  header_timeout_seconds: {CROWDED_HEADER_TIMEOUT}
  keepalive_timeout_seconds: 60
"""


def test_connections_beyond_max_connections_are_refused_while_open_ones_are_served(
    tmp_path: Path,
) -> None:
    with LiveNode(tmp_path / "crowded", CROWDED_CONFIG) as node, connect(node.port) as peer:
        peer.send(head())
        assert peer.response().status_code == 200
        with connect(node.port) as idle_1, connect(node.port) as idle_2:
            # Three open: the fourth is answered 503 at once, and closed.
            with connect(node.port) as extra:
                response = extra.response()
                message = expect_refusal(response, 503)
                assert "connections" in message.lower()
                assert response.headers.get("retry-after") == "1"
                extra.eof()
            [event] = node.wait_for_events(REJECTED, 1)
            assert (event["reason"], event["status"], event["limit"]) == (
                "too_many_connections",
                503,
                3,
            )
            # The established peer is still served on its open connection.
            peer.send(head())
            assert peer.response().status_code == 200
            # The idle ones are refused at their header timeout, and closed.
            for idle in (idle_1, idle_2):
                expect_refusal(idle.response(timeout=CROWDED_HEADER_TIMEOUT + LATE), 408)
                idle.eof()
        # Their slots free up as the node sees them go; each refused attempt is answered at
        # once, so this loop waits on the node, bounded by the deadline.
        deadline = time.monotonic() + 10
        while True:
            with connect(node.port) as fresh:
                fresh.send(head())
                status = fresh.response().status_code
            if status == 200 or time.monotonic() > deadline:
                break
        assert status == 200


# -- the event stream -------------------------------------------------------------------------

# The human-readable notices a start prints for the operator (see README: the admin token, a
# missing config.yaml, and where it serves); everything else on stderr is an event line.
STARTUP_NOTICES = re.compile(
    r"^(admin API token: |no .*config\.yaml: starting with defaults|serving on http)"
)


def test_every_stderr_line_is_a_json_event_even_for_garbage(tmp_path: Path) -> None:
    node = LiveNode(tmp_path / "garbage", "a2a:\n  enabled: true\n")
    with node:
        for junk in (
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage",  # a TLS hello
            b"NOT HTTP AT ALL\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
            b"GET /\x00 HTTP/1.1\r\n\r\n",
        ):
            with connect(node.port) as conn:
                conn.send(junk)
                assert conn.response().status_code == 400
                conn.eof()
        with connect(node.port) as conn:  # a 404 of the node's own router
            conn.send(head("/no/such/path"))
            assert conn.response().status_code == 404
        node.wait_for_event("server.log", logger="uvicorn.error")
    events = 0
    for line in node.lines:
        if STARTUP_NOTICES.match(line):
            continue
        event = json.loads(line)
        assert isinstance(event, dict), line
        assert {"ts", "level", "event"} <= set(event), line
        assert "Traceback" not in line
        events += 1
    assert events >= 6
    for event in node.events("server.log"):
        assert set(event) <= {"ts", "level", "event", "logger", "message", "exc_type"}
