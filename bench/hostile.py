"""Hostile bodies: 100 MiB sent to a server over a raw socket, and its memory meanwhile.

Three ways: chunked with no Content-Length; a lying Content-Length (1000 declared, 100 MiB
sent); an honest Content-Length of 100 MiB. The request carries the right peer headers, so
only the size can stop it. The client keeps sending while it reads, until the whole body is
sent or the server closes the connection, and records when the first answer came.

Memory is the server's VmRSS before, after, and its peak in between (VmHWM, reset before the
send through /proc/PID/clear_refs; where the kernel refuses that, the RSS sampled while
sending). Growth is peak minus before.
"""

from __future__ import annotations

import re
import select
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass

from bench.serve import RPC_PATH
from bench.system import peak_rss_kib, reset_peak_rss, rss_kib

MIB = 1 << 20
BODY_BYTES = 100 * MIB
CHUNK = 64 * 1024
TIME_LIMIT = 60.0
DRAIN_SECONDS = 5.0  # reading the answer once everything is sent


@dataclass(frozen=True)
class Case:
    name: str
    declared: int | None  # Content-Length sent; None: chunked


CASES = (
    Case("chunked, no Content-Length", None),
    Case("Content-Length 1000, 100 MiB sent", 1000),
    Case("Content-Length 100 MiB, honest", BODY_BYTES),
)


@dataclass
class HostileResult:
    case: str
    statuses: list[int]  # every HTTP status line seen on the connection, in order
    answered_after: int | None  # body bytes sent when the first answer arrived
    sent: int  # body bytes sent in all
    closed_by_server: bool
    seconds: float
    rss_before_kib: int
    rss_after_kib: int
    peak_kib: int
    peak_from: str  # "VmHWM" or "sampled"

    @property
    def growth_mib(self) -> float:
        return max(0, self.peak_kib - self.rss_before_kib) / 1024


def _body(case: Case) -> Iterator[bytes]:
    filler = b"x" * CHUNK
    for offset in range(0, BODY_BYTES, CHUNK):
        data = filler[: min(CHUNK, BODY_BYTES - offset)]
        yield (b"%x\r\n" % len(data) + data + b"\r\n") if case.declared is None else data
    if case.declared is None:
        yield b"0\r\n\r\n"


def _head(case: Case, port: int, headers: dict[str, str]) -> bytes:
    lines = [f"POST {RPC_PATH} HTTP/1.1", f"Host: 127.0.0.1:{port}",
             "Content-Type: application/json"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if case.declared is None:
        lines.append("Transfer-Encoding: chunked")
    else:
        lines.append(f"Content-Length: {case.declared}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def run_case(case: Case, port: int, pid: int, headers: dict[str, str]) -> HostileResult:
    before = rss_kib(pid)
    hwm = reset_peak_rss(pid)
    sampled = before
    received = b""
    answered_after: int | None = None
    sent = 0
    closed = False
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(_head(case, port, headers))
        sock.setblocking(False)
        chunks = _body(case)
        pending = next(chunks, b"")
        last_sample = 0.0
        while pending and time.monotonic() - started < TIME_LIMIT:
            readable, writable, _ = select.select([sock], [sock], [], 1.0)
            if readable:
                try:
                    data = sock.recv(65536)
                except ConnectionResetError:
                    data = b""
                if not data:
                    closed = True
                    break
                if answered_after is None:
                    answered_after = sent
                received += data
            if writable:
                try:
                    n = sock.send(pending)
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
                    break
                sent += n
                pending = pending[n:] or next(chunks, b"")
            now = time.monotonic()
            if now - last_sample > 0.005:
                sampled = max(sampled, rss_kib(pid))
                last_sample = now
        if not closed:
            if not pending:
                sock.shutdown(socket.SHUT_WR)  # all sent: read the answer until it closes
            received += _drain(sock)
            if answered_after is None and received:
                answered_after = sent
    seconds = time.monotonic() - started
    time.sleep(0.2)  # let the server finish with the connection before reading its memory
    after = rss_kib(pid)
    peak = max(peak_rss_kib(pid), sampled) if hwm else max(sampled, after)
    statuses = [int(code) for code in re.findall(rb"HTTP/1\.[01] (\d{3}) ", received)]
    return HostileResult(case.name, statuses, answered_after, sent, closed, seconds, before,
                         after, peak, "VmHWM" if hwm else "sampled")


def _drain(sock: socket.socket) -> bytes:
    """Whatever the server still sends, until it closes or DRAIN_SECONDS pass."""
    data = b""
    deadline = time.monotonic() + DRAIN_SECONDS
    while time.monotonic() < deadline:
        readable, _, _ = select.select([sock], [], [], 0.2)
        if not readable:
            continue
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, BlockingIOError):
            break
        if not chunk:
            break
        data += chunk
    return data


def run_all(port: int, pid: int, headers: dict[str, str]) -> list[HostileResult]:
    return [run_case(case, port, pid, headers) for case in CASES]
