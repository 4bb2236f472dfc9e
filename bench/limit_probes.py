"""Does a server keep the node's hostile-condition limits? One raw-socket probe per limit.

The limits (config.yaml `server:` and `a2a.max_request_body_bytes`, tested for the node in
tests/integration/test_hostile_http.py): a head over the byte cap is answered 431 as soon as
the cap is passed (not once the head is complete); headers or a body that trickle in are cut
off with 408 at their timeouts; a connection beyond `max_connections` is answered 503 at once;
a body over the ceiling is answered 413, declared or streamed. Each probe says what the server
did (the status, or that it closed, or that nothing came) and when; `kept` whether that is the
limit's behaviour.
"""

from __future__ import annotations

import contextlib
import select
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass

from bench.serve import RPC_PATH

LATE = 5.0  # seconds past a timeout the probe waits for the server to act
CHUNK = 16 * 1024
# What a hostile head or body sends at most: far above what loopback's socket buffers hold
# (a few MiB), so an answer that comes before the flood ends came before the server read it.
FLOOD_BYTES = 32 << 20


@dataclass(frozen=True)
class Limits:
    max_header_bytes: int = 8192
    header_timeout: float = 1.0
    body_timeout: float = 1.0
    max_connections: int = 16
    max_body_bytes: int = 65536

    def config_yaml(self, peer: str) -> str:
        """A node config with these limits (small, so the probes are quick)."""
        return (f"a2a:\n  enabled: true\n  allowed_peers: [{peer}]\n"
                f"  max_request_body_bytes: {self.max_body_bytes}\n"
                f"server:\n  max_header_bytes: {self.max_header_bytes}\n"
                f"  header_timeout_seconds: {self.header_timeout}\n"
                f"  body_timeout_seconds: {self.body_timeout}\n"
                f"  max_connections: {self.max_connections}\n")


@dataclass(frozen=True)
class Outcome:
    limit: str
    expected: str
    status: int | None  # the answer's status; None: no answer
    closed: bool  # the server closed (or reset) the connection
    seconds: float  # from the probe's start to the answer, the close or giving up
    sent: int = 0  # bytes the probe had sent by then (head and body floods)
    kept: bool = False

    def what(self) -> str:
        if self.status is not None:
            said = f"{self.status}"
        elif self.closed:
            said = "closed, no answer"
        else:
            said = "nothing"
        extra = f" after {self.sent:,} B sent" if self.sent else ""
        return f"{said} at {self.seconds:.1f} s{extra}"


def parse_status(head: bytes) -> int | None:
    """The status code of an HTTP/1.x answer's first line; None if it is not one."""
    first = head.split(b"\r\n", 1)[0].split()
    if len(first) >= 2 and first[0].startswith(b"HTTP/1.") and first[1].isdigit():
        return int(first[1])
    return None


class Probe:
    """One connection: what the server answered (the status line) or whether it closed."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.started = time.monotonic()
        self.buffer = b""
        self.closed = False
        self.sent = 0

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def status(self) -> int | None:
        return parse_status(self.buffer) if b"\r\n" in self.buffer else None

    def poll(self, wait: float) -> bool:
        """Read what is there (waiting up to `wait` s); True once an answer or a close came."""
        if self.closed or self.status() is not None:
            return True
        readable, _, _ = select.select([self.sock], [], [], max(0.0, wait))
        if readable:
            try:
                data = self.sock.recv(65536)
            except OSError:
                data = b""
            if data:
                self.buffer += data
            else:
                self.closed = True
        return self.closed or self.status() is not None

    def wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.poll(deadline - time.monotonic()):
            if time.monotonic() >= deadline:
                return

    def send(self, data: bytes) -> bool:
        """Send unless the server already answered or closed; False once it did."""
        if self.poll(0):
            return False
        try:
            self.sock.sendall(data)
        except OSError:  # closed under the probe: read the answer it may have left
            self.wait(1.0)
            self.closed = True
            return False
        self.sent += len(data)
        return True

    def outcome(self, limit: str, expected: str, kept: bool, count_sent: bool = False
                ) -> Outcome:
        return Outcome(limit, expected, self.status(), self.closed, self.elapsed(),
                       self.sent if count_sent else 0, kept)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


@contextlib.contextmanager
def probe(port: int) -> Iterator[Probe]:
    conn = Probe(port)
    try:
        yield conn
    finally:
        conn.close()


def _head(headers: dict[str, str], extra: str = "") -> bytes:
    lines = [f"POST {RPC_PATH} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
             *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n" + extra).encode()


def header_cap(port: int, limits: Limits) -> Outcome:
    """A header value that never ends: 431 once the cap is passed, not at the end."""
    with probe(port) as conn:
        conn.send(_head({}, "X-Filler: "))
        while conn.sent < FLOOD_BYTES and conn.send(b"a" * CHUNK):
            pass
        conn.wait(LATE)
        early = conn.sent < FLOOD_BYTES
        return conn.outcome("header cap", "431 early", conn.status() == 431 and early, True)


def header_timeout(port: int, limits: Limits) -> Outcome:
    """Half a head, then silence: 408 at the header timeout."""
    with probe(port) as conn:
        conn.send(_head({}))
        conn.wait(limits.header_timeout + LATE)
        kept = conn.status() == 408 and conn.elapsed() < limits.header_timeout + LATE
        return conn.outcome("slow headers", "408", kept)


def body_timeout(port: int, limits: Limits, headers: dict[str, str]) -> Outcome:
    """A whole head announcing 1000 bytes, 10 of them sent: 408 at the body timeout."""
    with probe(port) as conn:
        conn.send(_head(headers, "Content-Length: 1000\r\n\r\n") + b'{"jsonrpc"')
        conn.wait(limits.body_timeout + LATE)
        kept = conn.status() == 408 and conn.elapsed() < limits.body_timeout + LATE
        return conn.outcome("slow body", "408", kept)


def connection_bound(port: int, limits: Limits) -> Outcome:
    """`max_connections` open connections, then one more: 503 at once."""
    with contextlib.ExitStack() as stack:
        held = [stack.enter_context(probe(port)) for _ in range(limits.max_connections)]
        for conn in held:  # each is accepted (a probe of its own is answered if it is not)
            conn.poll(0)
        extra = stack.enter_context(probe(port))
        extra.wait(2.0)
        if extra.status() is None and not extra.closed:
            # Nothing said: is it served? A request the node answers without a peer.
            extra.send(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            extra.wait(LATE)
        return extra.outcome("connection bound", "503 at once",
                             extra.status() == 503 and extra.elapsed() < 2.0)


def body_ceiling_declared(port: int, limits: Limits, headers: dict[str, str]) -> Outcome:
    """Content-Length over the ceiling: 413 before the body is sent."""
    with probe(port) as conn:
        conn.send(_head(headers, f"Content-Length: {limits.max_body_bytes * 4}\r\n\r\n"))
        conn.wait(LATE)
        return conn.outcome("body ceiling (declared)", "413", conn.status() == 413)


def body_ceiling_streamed(port: int, limits: Limits, headers: dict[str, str]) -> Outcome:
    """A chunked body with no length: 413 once it passes the ceiling."""
    with probe(port) as conn:
        conn.send(_head(headers, "Transfer-Encoding: chunked\r\n\r\n"))
        chunk = f"{CHUNK:x}\r\n".encode() + b"a" * CHUNK + b"\r\n"
        while conn.sent < FLOOD_BYTES and conn.send(chunk):
            pass
        conn.wait(LATE)
        early = conn.sent < FLOOD_BYTES
        return conn.outcome("body ceiling (streamed)", "413 early",
                            conn.status() == 413 and early, True)


def run_all(port: int, limits: Limits, headers: dict[str, str]) -> list[Outcome]:
    """Every probe; the connection bound last, since the server may count the connections it
    held until it has seen them closed."""
    return [
        header_cap(port, limits),
        header_timeout(port, limits),
        body_timeout(port, limits, headers),
        body_ceiling_declared(port, limits, headers),
        body_ceiling_streamed(port, limits, headers),
        connection_bound(port, limits),
    ]
