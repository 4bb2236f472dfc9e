"""The server-choice bench's pieces with logic: the floor apps on each interface (driven through
that interface, the bare protocols over a real loopback socket, the node on the bare one as
the bench starts it), the rounds' arithmetic, the probes' parsing and the config they write,
and Granian's command line."""

from __future__ import annotations

import asyncio
import http.client
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.limit_probes import Limits, Outcome, parse_status
from bench.rounds import RowSamples, Sample, Spread, rotation, unexpected
from bench.scale_out import process_rss
from bench.scenarios import probe, refused, tasks_get
from bench.server_apps import (
    BareAsgiProtocol,
    BareEchoProtocol,
    asgi_echo,
    echo_answer,
    rsgi_echo,
)
from bench.server_choice import (
    LIVE_FLOOR,
    chosen,
    granian_command,
    granian_probe_options,
    plain_config,
    start_node_bare,
)
from bench.servers import Server
from bench.wrk import WrkResult
from synthorg.config.company import parse_config

REQUEST = b'{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"t-1"}}'
ANSWER = {"jsonrpc": "2.0", "id": 7, "result": {"echo": {"id": "t-1"}}}


def test_the_echo_answers_the_requests_id_and_params() -> None:
    assert json.loads(echo_answer(REQUEST)) == ANSWER
    assert json.loads(echo_answer(b"[1, 2]")) == {"jsonrpc": "2.0", "id": None,
                                                  "result": {"echo": None}}
    with pytest.raises(ValueError):
        echo_answer(b"not json")


async def _asgi(body_chunks: list[bytes]) -> list[dict[str, Any]]:
    incoming = [{"type": "http.request", "body": chunk, "more_body": i < len(body_chunks) - 1}
                for i, chunk in enumerate(body_chunks)]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asgi_echo({"type": "http", "method": "POST", "path": "/"}, receive, send)
    return sent


def test_the_asgi_echo_reads_a_body_in_chunks_and_answers_json() -> None:
    start, body = asyncio.run(_asgi([REQUEST[:10], REQUEST[10:]]))
    assert start["status"] == 200
    assert dict(start["headers"])[b"content-length"] == str(len(body["body"])).encode()
    assert json.loads(body["body"]) == ANSWER
    start, _ = asyncio.run(_asgi([b"{"]))
    assert start["status"] == 400


def test_the_asgi_echo_acknowledges_the_lifespan() -> None:
    incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(asgi_echo({"type": "lifespan"}, receive, send))
    assert [m["type"] for m in sent] == ["lifespan.startup.complete",
                                         "lifespan.shutdown.complete"]


class RsgiProtocol:
    """What Granian hands an RSGI app for one request: the body, and a response call."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.response: tuple[int, list[tuple[str, str]], bytes] | None = None

    async def __call__(self) -> bytes:
        return self.body

    def response_bytes(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.response = (status, headers, body)


def test_the_rsgi_echo_answers_the_same() -> None:
    protocol = RsgiProtocol(REQUEST)
    asyncio.run(rsgi_echo(None, protocol))
    assert protocol.response is not None
    status, headers, body = protocol.response
    assert (status, headers) == (200, [("content-type", "application/json")])
    assert json.loads(body) == ANSWER


def test_the_bare_protocol_serves_two_requests_on_one_kept_alive_connection() -> None:
    async def exchange() -> bytes:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(BareEchoProtocol, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        request = (b"POST /api/v1/a2a/ HTTP/1.1\r\nHost: x\r\nContent-Length: "
                   + str(len(REQUEST)).encode() + b"\r\n\r\n" + REQUEST)
        writer.write(request + request)
        answers = b""
        while answers.count(b"HTTP/1.1 200 OK") < 2 or not answers.endswith(b"}}}"):
            answers += await asyncio.wait_for(reader.read(65536), 10)
        writer.close()
        server.close()
        await server.wait_closed()
        return answers

    answers = asyncio.run(exchange())
    first, _, second = answers.partition(b"HTTP/1.1 200 OK")[2].partition(b"HTTP/1.1 200 OK")
    for answer in (first, second):
        head, _, body = answer.partition(b"\r\n\r\n")
        assert f"content-length: {len(body)}".encode() in head
        assert json.loads(body) == ANSWER


async def _streamed_or_echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The echo, or on /stream an answer of unknown length in three pieces."""
    if scope["path"] != "/stream":
        await asgi_echo(scope, receive, send)
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    for piece in (b"one", b"two"):
        await send({"type": "http.response.body", "body": piece, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


def test_the_bare_asgi_protocol_answers_pipelined_requests_in_order() -> None:
    async def exchange() -> bytes:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: BareAsgiProtocol(_streamed_or_echo, loop),
                                          "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        echo = (b"POST /api/v1/a2a/ HTTP/1.1\r\nHost: x\r\nContent-Length: "
                + str(len(REQUEST)).encode() + b"\r\n\r\n" + REQUEST)
        last = b"GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        writer.write(echo + echo + last)  # three requests in one write
        answers = await asyncio.wait_for(reader.read(), 10)  # until the server closes
        writer.close()
        server.close()
        await server.wait_closed()
        return answers

    answers = asyncio.run(exchange())
    first, second, third = answers.split(b"HTTP/1.1 200 OK\r\n")[1:]
    for answer in (first, second):
        head, _, body = answer.partition(b"\r\n\r\n")
        assert f"content-length: {len(body)}".encode() in head
        assert json.loads(body) == ANSWER
    head, _, body = third.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head and b"connection: close" in head
    assert body == b"3\r\none\r\n3\r\ntwo\r\n0\r\n\r\n"


def test_the_node_on_the_bare_protocol_serves_its_gateway_and_its_card(tmp_path: Path) -> None:
    server = start_node_bare(tmp_path, [], "bare-node", plain_config())
    try:
        assert probe(server, tasks_get(server)).startswith("200 result")
        assert probe(server, refused(server)) == "401 error -32003"
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        conn.request("GET", "/.well-known/agent-card.json")
        response = conn.getresponse()
        card = json.loads(response.read())
        conn.close()
        assert response.status == 200 and card["name"]
    finally:
        server.stop()
    # SIGTERM ends it through the app's lifespan shut-down, cleanly.
    assert server.proc.returncode == 0, server.log_tail()


def test_only_picks_candidates_by_words_of_their_names() -> None:
    assert [c.name for c in chosen("bare, live")] == ["httptools+uvloop bare", LIVE_FLOOR]
    assert len(chosen(None)) == len(chosen("")) > 2


def test_a_spread_is_the_median_and_the_extremes() -> None:
    spread = Spread.of([5.0, 1.0, 3.0, 4.0])
    assert (spread.median, spread.low, spread.high) == (3.5, 1.0, 5.0)
    assert spread.relative() == pytest.approx(4.0 / 3.5)
    assert spread.show(1) == "3.5 [1.0-5.0]"
    assert Spread.of([]).show() == "-"
    assert Spread.of([float("nan"), 2.0]).median == 2.0


def test_each_round_starts_one_row_later() -> None:
    rows = ["a", "b", "c"]
    assert [rotation(rows, i) for i in range(4)] == [
        ["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]
    assert rotation([], 3) == []


def _result(requests: int, errors: dict[str, int]) -> WrkResult:
    return WrkResult(requests, 1.0, float(requests), {}, {
        "connect": 0, "read": 0, "write": 0, "timeout": 0, "status": 0, **errors}, 0.5, "")


def test_unexpected_answers_depend_on_the_status_a_row_expects() -> None:
    assert unexpected(_result(100, {"status": 3, "read": 1}), 200) == 4
    # wrk counts the answers of 400 and above; a refusal row expects them all.
    assert unexpected(_result(100, {"status": 100}), 401) == 0
    assert unexpected(_result(100, {"status": 98, "timeout": 1}), 401) == 3


def test_a_status_line_is_parsed_and_anything_else_is_not() -> None:
    assert parse_status(b"HTTP/1.1 431 Request Header Fields Too Large\r\n") == 431
    assert parse_status(b"HTTP/1.0 503 Service Unavailable\r\nretry-after: 1\r\n") == 503
    assert parse_status(b"garbage\r\n") is None
    assert parse_status(b"") is None


def test_an_outcome_says_what_came_and_when() -> None:
    assert Outcome("x", "408", 408, True, 1.04, 0, True).what() == "408 at 1.0 s"
    assert Outcome("x", "431", None, True, 0.5, 2048).what() == \
        "closed, no answer at 0.5 s after 2,048 B sent"
    assert Outcome("x", "503", None, False, 6.0).what() == "nothing at 6.0 s"


def test_the_probes_config_is_one_the_node_accepts_with_those_limits() -> None:
    limits = Limits(max_header_bytes=4096, header_timeout=0.5, body_timeout=2.0,
                    max_connections=3, max_body_bytes=2048)
    config = parse_config(yaml.safe_load(limits.config_yaml("bench-peer")), "test")
    assert config.allowed_peers == frozenset({"bench-peer"})
    assert config.a2a.max_request_body_bytes == 2048
    server = config.server
    assert (server.max_header_bytes, server.header_timeout_seconds,
            server.body_timeout_seconds, server.max_connections) == (4096, 0.5, 2.0, 3)


def test_granian_is_given_one_worker_one_thread_and_its_nearest_limits() -> None:
    command = granian_command("asgi", "bench.server_apps:node_app", 8123, factory=True)
    assert command[1:3] == ["-m", "granian"]
    assert command[-2:] == ["--factory", "bench.server_apps:node_app"]

    def value(flag: str) -> str:
        return command[command.index(flag) + 1]

    assert value("--interface") == "asgi" and value("--port") == "8123"
    assert (value("--workers"), value("--runtime-threads"), value("--http")) == ("1", "1", "1")
    assert "--factory" not in granian_command("rsgi", "bench.server_apps:rsgi_echo", 1)
    options = granian_probe_options(Limits(max_header_bytes=4096, header_timeout=1.5,
                                           max_connections=16))
    assert options == ("--http1-header-read-timeout", "1500", "--http1-buffer-size", "8192",
                       "--backpressure", "16")


def test_the_memory_of_a_node_of_one_process_is_named_as_such(tmp_path: Path) -> None:
    # The child says it is up before its memory is read (read at exec, it is a fraction of
    # a MiB).
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; print('up', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
        server = Server("one", "node", proc, 0, tmp_path / "log")
        [(role, mib)] = process_rss(server)
        assert role == "node (one process)" and 1 < mib < 500
    finally:
        proc.communicate(b"")


def test_quiet_rounds_are_those_in_which_others_left_the_servers_cpu_alone() -> None:
    samples = RowSamples("row", [Sample(_result(1000, {}), 0.1, 0.02),
                                 Sample(_result(300, {}), 0.03, 0.60),
                                 Sample(_result(900, {}), 0.09, 0.05)])
    quiet, count = samples.quiet_rps()
    assert count == 2 and (quiet.low, quiet.high) == (900.0, 1000.0)
    assert samples.rps().median == 900.0
    assert samples.cpu_us().median == pytest.approx(100.0)
    assert samples.others().high == 0.60
