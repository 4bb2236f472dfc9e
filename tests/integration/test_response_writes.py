"""What the node's HTTP server writes per answer: an answer of known length leaves in one
write, its head with its body; a streamed answer's head leaves before its first chunk.

A real uvicorn with the node's protocol class on 127.0.0.1, serving a small ASGI app. The one
difference from the node's protocol: each connection's transport is passed through a recorder
that notes every write before making it, so a test sees what left in which write. Clients are
raw sockets (httpx for one test) whose reads are bounded by the socket's timeout; nothing
sleeps, and the streamed answer waits on an event the test sets.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from typing import Any, NamedTuple, cast

import httpx
import pytest
import uvicorn

from synthorg.generated.models import ServerConfig
from synthorg.http import uvicorn_options
from synthorg.http.protocol import LimitedHttpToolsProtocol

TIMEOUT = 10.0
HEAD_END = b"\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"

# What the server wrote on each connection, in order, by the client's port.
WRITES: dict[int, list[bytes]] = {}


class RecordedTransport:
    """The connection's real transport; each write is recorded, then made."""

    def __init__(self, transport: asyncio.Transport, writes: list[bytes]) -> None:
        self._transport = transport
        self._writes = writes

    def write(self, data: bytes) -> None:
        self._writes.append(bytes(data))
        self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class RecordingProtocol(LimitedHttpToolsProtocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        writes = WRITES.setdefault(transport.get_extra_info("peername")[1], [])
        super().connection_made(cast(asyncio.Transport, RecordedTransport(transport, writes)))


async def answer(send: Any, body: bytes, *headers: tuple[bytes, bytes]) -> None:
    await send({
        "type": "http.response.start",
        "status": 200,
        "headers": [
            (b"content-type", b"text/plain"),
            (b"content-length", str(len(body)).encode()),
            *headers,
        ],
    })
    await send({"type": "http.response.body", "body": body})


class App:
    def __init__(self) -> None:
        self.started = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.gate: asyncio.Event | None = None  # the streamed answer's first chunk waits on it

    def open_gate(self) -> None:
        assert self.loop is not None and self.gate is not None
        self.loop.call_soon_threadsafe(self.gate.set)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    self.loop, self.gate = asyncio.get_running_loop(), asyncio.Event()
                    await send({"type": "lifespan.startup.complete"})
                    self.started.set()
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        path = scope["path"]
        if path == "/fixed":
            await answer(send, scope["query_string"] or b"hello")
        elif path == "/close":
            await answer(send, b"bye", (b"connection", b"close"))
        elif path == "/parts":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-length", b"10")]})
            await send({"type": "http.response.body", "body": b"hello", "more_body": True})
            await send({"type": "http.response.body", "body": b"world"})
        elif path == "/echo":
            body, more = b"", True
            while more:
                message = await receive()
                body, more = body + message.get("body", b""), message.get("more_body", False)
            await answer(send, body)
        elif path == "/stream":
            assert self.gate is not None
            self.gate.clear()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream")]})
            await self.gate.wait()
            await send({"type": "http.response.body", "body": b"one", "more_body": True})
            await send({"type": "http.response.body", "body": b"two"})
        elif path == "/fail-after-start":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-length", b"5")]})
            raise RuntimeError("failed after starting the answer")
        elif path == "/fail":
            raise RuntimeError("failed before answering")


class Server(NamedTuple):
    port: int
    app: App


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    app = App()
    options = {**uvicorn_options(ServerConfig()), "http": RecordingProtocol}
    config = uvicorn.Config(app, lifespan="on", log_level="critical", **options)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert app.started.wait(TIMEOUT)
    try:
        yield Server(sock.getsockname()[1], app)
    finally:
        running.should_exit = True
        thread.join(TIMEOUT)
        sock.close()


# -- a raw HTTP/1.1 client --------------------------------------------------------------------


class Answer(NamedTuple):
    status: int
    headers: dict[str, str]  # lower-cased names
    content: bytes
    raw: bytes  # exactly the bytes read for this answer


def request(method: str, path: str, *headers: str, body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *headers]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class Client:
    """One connection; every read waits at most the socket's timeout."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.buffer = b""

    @property
    def writes(self) -> list[bytes]:
        return WRITES.get(self.sock.getsockname()[1], [])

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        self.buffer += chunk
        return bool(chunk)

    def until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            assert self._fill(), f"closed before {marker!r}; have {self.buffer[:300]!r}"
        data, _, self.buffer = self.buffer.partition(marker)
        return data + marker

    def exactly(self, count: int) -> bytes:
        while len(self.buffer) < count:
            assert self._fill(), f"closed after {self.buffer[:300]!r}"
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def head(self) -> tuple[bytes, int, dict[str, str]]:
        raw = self.until(HEAD_END)
        status_line, *lines = raw[: -len(HEAD_END)].decode("latin-1").split("\r\n")
        headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return raw, int(status_line.split()[1]), headers

    def answer(self, method: str = "GET") -> Answer:
        raw, status, headers = self.head()
        if method == "HEAD":
            return Answer(status, headers, b"", raw)
        if headers.get("transfer-encoding") == "chunked":
            chunked = self.until(LAST_CHUNK)
            return Answer(status, headers, dechunk(chunked), raw + chunked)
        content = self.exactly(int(headers["content-length"]))
        return Answer(status, headers, content, raw + content)

    def eof(self) -> bytes:
        """Everything until the server closes."""
        while self._fill():
            pass
        data, self.buffer = self.buffer, b""
        return data

    def close(self) -> None:
        self.sock.close()


def dechunk(data: bytes) -> bytes:
    content = b""
    while True:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return content
        content, data = content + data[:size], data[size + 2 :]


@pytest.fixture
def client(server: Server) -> Iterator[Client]:
    connection = Client(server.port)
    try:
        yield connection
    finally:
        connection.close()


# -- answers of known length -------------------------------------------------------------------


def test_an_answer_of_known_length_leaves_in_one_write_each_kept_alive(server: Server) -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=TIMEOUT) as http:
        first = http.get("/fixed")
        port = first.extensions["network_stream"].get_extra_info("client_addr")[1]
        second = http.get("/fixed", params={"again": ""})
        assert second.extensions["network_stream"].get_extra_info("client_addr")[1] == port
    assert (first.status_code, first.content) == (200, b"hello")
    assert first.headers["content-type"] == "text/plain"
    assert first.headers["content-length"] == "5"
    assert second.content == b"again="
    writes = WRITES[port]
    assert len(writes) == 2
    assert writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert writes[0].endswith(HEAD_END + b"hello")
    assert writes[1].endswith(HEAD_END + b"again=")


def test_pipelined_requests_are_answered_in_order_one_write_each(client: Client) -> None:
    client.sock.sendall(request("GET", "/fixed?one") + request("GET", "/fixed?two"))
    one, two = client.answer(), client.answer()
    assert (one.status, one.content, two.status, two.content) == (200, b"one", 200, b"two")
    assert client.writes == [one.raw, two.raw]


def test_only_the_first_write_of_a_body_in_parts_carries_the_head(client: Client) -> None:
    client.sock.sendall(request("GET", "/parts"))
    parts = client.answer()
    assert parts.content == b"helloworld"
    assert client.writes == [parts.raw[: -len(b"world")], b"world"]


def test_a_head_request_gets_the_head_alone_and_the_connection_stays_usable(
    client: Client,
) -> None:
    client.sock.sendall(request("HEAD", "/fixed"))
    head = client.answer("HEAD")
    assert (head.status, head.headers["content-length"]) == (200, "5")
    client.sock.sendall(request("GET", "/fixed"))
    get = client.answer()
    assert get.content == b"hello"  # no stray body of the HEAD answer before it
    assert client.writes == [head.raw, get.raw]


@pytest.mark.parametrize(
    ("path", "headers"),
    [("/fixed", ("Connection: close",)), ("/close", ())],
    ids=["client-asks", "app-answers"],
)
def test_a_connection_close_answer_is_one_write_then_the_close(
    client: Client, path: str, headers: tuple[str, ...]
) -> None:
    client.sock.sendall(request("GET", path, *headers))
    closing = client.answer()
    assert closing.status == 200
    assert closing.headers["connection"] == "close"
    assert client.eof() == b""
    assert client.writes == [closing.raw]


def test_a_100_continue_precedes_the_answer_in_its_own_write(client: Client) -> None:
    client.sock.sendall(request("POST", "/echo", "Expect: 100-continue", "Content-Length: 4"))
    assert client.until(HEAD_END) == CONTINUE
    client.sock.sendall(b"ping")
    echoed = client.answer()
    assert echoed.content == b"ping"
    assert client.writes == [CONTINUE, echoed.raw]


# -- streams and failures ---------------------------------------------------------------------


def test_a_streamed_answer_s_head_reaches_the_client_before_its_first_chunk(
    server: Server, client: Client
) -> None:
    client.sock.sendall(request("GET", "/stream"))
    raw, status, headers = client.head()  # the app is still waiting on the gate
    assert (status, headers["transfer-encoding"]) == (200, "chunked")
    assert client.writes == [raw]
    server.app.open_gate()
    chunked = client.until(LAST_CHUNK)
    assert dechunk(chunked) == b"onetwo"
    assert b"".join(client.writes) == raw + chunked


def test_an_app_that_fails_after_starting_its_answer_gets_the_connection_closed(
    client: Client,
) -> None:
    client.sock.sendall(request("GET", "/fail-after-start"))
    # The head was held for a body that never came: nothing but the close reaches the client.
    assert client.eof() == b""
    assert client.writes == []


def test_an_app_that_fails_before_answering_gets_a_500_in_one_write(client: Client) -> None:
    client.sock.sendall(request("GET", "/fail"))
    failed = client.answer()
    assert (failed.status, failed.content) == (500, b"Internal Server Error")
    assert failed.headers["connection"] == "close"
    assert client.eof() == b""
    assert client.writes == [failed.raw]
