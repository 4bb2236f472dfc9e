"""The apps `bench.server_choice` serves with each candidate HTTP server.

The floor of every server is one JSON-RPC echo (`echo_answer`: parse the body, answer a result
carrying the request's params), written against each interface with nothing else around it:
raw ASGI (`asgi_echo`, for uvicorn and Granian), RSGI (`rsgi_echo`, Granian's own interface)
and a bare asyncio protocol on httptools and uvloop (`BareEchoProtocol`: no server library at
all, the lowest a Python server can go). `node_app` is this node built from the environment,
as a worker of `serve --workers N` builds it, for a server other than uvicorn;
`BareAsgiProtocol` serves it (or any ASGI app) on the same bare footing.

    python -m bench.server_apps uvicorn-echo   # uvicorn + the node's protocol class, echo
    python -m bench.server_apps uvicorn-stock-echo  # uvicorn + its own httptools protocol
    python -m bench.server_apps bare-echo      # httptools + uvloop, echo
    python -m bench.server_apps bare-node      # httptools + uvloop, this node (SYNTHORG_DATA_DIR)

Each entry point binds 127.0.0.1:0 and writes the `bench.server.started` line with the port
once the socket listens, as `bench.serve` does. Granian is started by its own command line
(`bench.server_choice`) on a port picked beforehand.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
import socket
import sys
import traceback
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httptools

from bench.serve import STARTED

JSON_HEADERS = [(b"content-type", b"application/json")]


def echo_answer(body: bytes) -> bytes:
    """The floor's whole work: the JSON-RPC result echoing the request's params."""
    envelope = json.loads(body)
    if not isinstance(envelope, dict):
        envelope = {}
    return json.dumps({"jsonrpc": "2.0", "id": envelope.get("id"),
                       "result": {"echo": envelope.get("params")}},
                      separators=(",", ":")).encode()


def _answer_or_400(body: bytes) -> tuple[int, bytes]:
    try:
        return 200, echo_answer(body)
    except ValueError:
        return 400, b'{"error":"not JSON"}'


async def asgi_echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Raw ASGI (no framework): the echo for any request; lifespan acknowledged."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    status, answer = _answer_or_400(b"".join(chunks))
    await send({"type": "http.response.start", "status": status,
                "headers": [*JSON_HEADERS, (b"content-length", str(len(answer)).encode())]})
    await send({"type": "http.response.body", "body": answer})


async def rsgi_echo(scope: Any, protocol: Any) -> None:
    """Granian's RSGI interface: the same echo."""
    status, answer = _answer_or_400(await protocol())
    protocol.response_bytes(status, [("content-type", "application/json")], answer)


class BareEchoProtocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive on httptools, straight on the event loop: the echo for any request,
    nothing checked. Only what wrk and a probe need (no chunked answers, no pipelining care)."""

    def __init__(self) -> None:
        self.parser = httptools.HttpRequestParser(self)
        self.transport: Any = None
        self.body: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # uvloop's transports are not asyncio.Transport's

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n"
                                 b"connection: close\r\n\r\n")
            self.transport.close()

    # httptools callbacks
    def on_message_begin(self) -> None:
        self.body = []

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        status, answer = _answer_or_400(b"".join(self.body))
        keep = self.parser.should_keep_alive()
        self.transport.write(b"".join((
            b"HTTP/1.1 200 OK\r\n" if status == 200 else b"HTTP/1.1 400 Bad Request\r\n",
            b"content-type: application/json\r\ncontent-length: ",
            str(len(answer)).encode(), b"\r\n" if keep else b"\r\nconnection: close\r\n",
            b"\r\n", answer)))
        if not keep:
            self.transport.close()


ASGI = Callable[[dict[str, Any], Callable[[], Awaitable[dict[str, Any]]],
                 Callable[[dict[str, Any]], Awaitable[None]]], Awaitable[None]]
STATUS_LINES = {int(s): f"HTTP/1.1 {int(s)} {s.phrase}\r\n".encode() for s in HTTPStatus}
ASGI_VERSION = {"version": "3.0", "spec_version": "2.3"}
_CLOSE = (b"connection", b"close")
_NO_ANSWER = (b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n"
              b"connection: close\r\n\r\n")


def status_line(status: int) -> bytes:
    return STATUS_LINES.get(status) or f"HTTP/1.1 {status} \r\n".encode()


class _Exchange:
    """One request and its answer: the ASGI `receive` and `send` of a BareAsgiProtocol."""

    __slots__ = ("body", "body_taken", "chunked", "complete", "disconnect", "headers", "keep",
                 "protocol", "scope", "started", "status")

    def __init__(self, protocol: BareAsgiProtocol, scope: dict[str, Any], body: bytes,
                 keep: bool) -> None:
        self.protocol, self.scope, self.body, self.keep = protocol, scope, body, keep
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.started = self.complete = self.chunked = self.body_taken = False
        self.disconnect: asyncio.Future[None] | None = None  # made if the app waits for one

    async def receive(self) -> dict[str, Any]:
        """The whole body (buffered before the app was called), then only the disconnect:
        at the connection's end, or once the answer is complete."""
        if not self.body_taken:
            self.body_taken = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        if not self.complete and not self.protocol.closed:
            if self.disconnect is None:
                self.disconnect = self.protocol.loop.create_future()
            await self.disconnect
        return {"type": "http.disconnect"}

    def finished(self) -> None:
        if self.disconnect is not None and not self.disconnect.done():
            self.disconnect.set_result(None)

    async def send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.status, self.headers = message["status"], list(message.get("headers", ()))
            return
        if kind != "http.response.body" or self.complete:
            return
        body: bytes = message.get("body", b"")
        more = message.get("more_body", False)
        transport = self.protocol.transport
        head_only = self.scope["method"] == "HEAD"
        if not self.started:
            self.started = True
            sized = any(name.lower() == b"content-length" for name, _ in self.headers)
            if not sized and not more:
                self.headers.append((b"content-length", str(len(body)).encode()))
            elif not sized and not head_only:
                self.chunked = True
                self.headers.append((b"transfer-encoding", b"chunked"))
            if not self.keep:
                self.headers.append(_CLOSE)
            head = [status_line(self.status)]
            for name, value in self.headers:
                head += (name, b": ", value, b"\r\n")
            head.append(b"\r\n")
            if not head_only:
                head.append(self._frame(body, more))
            if not transport.is_closing():
                transport.write(b"".join(head))  # a whole answer: one write, head and body
        elif not head_only and (body or not more) and not transport.is_closing():
            transport.write(self._frame(body, more))
        if not more:
            self.complete = True
            self.finished()

    def _frame(self, body: bytes, more: bool) -> bytes:
        if not self.chunked:
            return body
        chunk = b"%x\r\n%b\r\n" % (len(body), body) if body else b""
        return chunk if more else chunk + b"0\r\n\r\n"


class BareAsgiProtocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive on httptools, straight on the event loop, for one ASGI app.

    The smallest server that runs an ASGI app: per request a minimal scope, one task, a body
    read whole before the app is called (`receive` returns it once, then waits for the
    disconnect), and an answer of known length written in one `transport.write`, its head with
    its body (a streamed answer goes out chunked, piece by piece). Requests on one connection
    are answered in order: one arriving while another is in progress waits, and reading pauses.

    It measures the cost ceiling of serving the node without an ASGI server library, not a
    server to deploy: it keeps none of the node protocol's limits (`synthorg.http.protocol`:
    no header cap, no header or body timeout, no connection bound, no body cap of its own, no
    write back-pressure, no TLS).
    """

    def __init__(self, app: ASGI, loop: asyncio.AbstractEventLoop) -> None:
        self.app, self.loop = app, loop
        self.parser = httptools.HttpRequestParser(self)
        self.transport: Any = None
        self.closed = False
        self.client: tuple[str, int] | None = None
        self.server: tuple[str, int] | None = None
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.current: _Exchange | None = None
        self.waiting: collections.deque[_Exchange] = collections.deque()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # uvloop's transports are not asyncio.Transport's
        peer, own = transport.get_extra_info("peername"), transport.get_extra_info("sockname")
        self.client = (peer[0], peer[1]) if peer else None
        self.server = (own[0], own[1]) if own else None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.waiting.clear()
        if self.current is not None:
            self.current.finished()

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            if self.current is None:
                self.transport.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n"
                                     b"connection: close\r\n\r\n")
            self.transport.close()

    # httptools callbacks
    def on_message_begin(self) -> None:
        self.url, self.headers, self.body = b"", [], []

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        # The body is read before the app runs: a client that waits to be told to send it
        # is told at once.
        if (b"expect", b"100-continue") in ((n, v.lower()) for n, v in self.headers):
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        url = httptools.parse_url(self.url)
        raw_path: bytes = url.path
        path = raw_path.decode("ascii")
        if "%" in path:
            path = unquote(path)
        http_version = self.parser.get_http_version()
        scope = {"type": "http", "asgi": ASGI_VERSION, "http_version": http_version,
                 "method": self.parser.get_method().decode("ascii"), "scheme": "http",
                 "path": path, "raw_path": raw_path, "query_string": url.query or b"",
                 "root_path": "", "headers": self.headers, "client": self.client,
                 "server": self.server}
        keep = http_version != "1.0" and self.parser.should_keep_alive()
        exchange = _Exchange(self, scope, b"".join(self.body), keep)
        if self.current is None:
            self._start(exchange)
        else:  # a pipelined request: after the one in progress
            self.waiting.append(exchange)
            self.transport.pause_reading()

    def _start(self, exchange: _Exchange) -> None:
        self.current = exchange
        self.loop.create_task(self._run(exchange))

    async def _run(self, exchange: _Exchange) -> None:
        try:
            await self.app(exchange.scope, exchange.receive, exchange.send)
        except Exception:  # an app that fails answers 500 if nothing was sent, else a close
            traceback.print_exc()
            if not exchange.started and not self.transport.is_closing():
                self.transport.write(_NO_ANSWER)
            self.transport.close()
            return
        finally:
            exchange.finished()
        if not exchange.complete:  # the app returned without finishing its answer
            if not exchange.started and not self.transport.is_closing():
                self.transport.write(_NO_ANSWER)
            self.transport.close()
            return
        if not exchange.keep:
            self.transport.close()
            return
        self.current = None
        if self.waiting:
            self._start(self.waiting.popleft())
            if not self.waiting and not self.closed:
                self.transport.resume_reading()


async def lifespan_startup(app: ASGI) -> Callable[[], Awaitable[None]]:
    """Run the app's lifespan start-up, as a server does before it listens; the coroutine
    that shuts it down. An app that returns without answering is served without a lifespan;
    one that fails before its start-up completes is not served."""
    incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    started: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    stopped: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def send(message: dict[str, Any]) -> None:
        kind = message["type"]
        target = started if kind.startswith("lifespan.startup") else stopped
        if not target.done():
            target.set_result(kind)

    async def run() -> None:
        outcome = "lifespan.unsupported"  # returned without answering: served without one
        try:
            await app({"type": "lifespan", "asgi": ASGI_VERSION, "state": {}}, incoming.get,
                      send)
        except Exception:
            traceback.print_exc()
            outcome = "lifespan.startup.failed"
        finally:
            for future in (started, stopped):
                if not future.done():
                    future.set_result(outcome)

    task = asyncio.create_task(run())
    await incoming.put({"type": "lifespan.startup"})
    if await started == "lifespan.startup.failed":
        raise RuntimeError("the app's lifespan start-up failed")

    async def shutdown() -> None:
        await incoming.put({"type": "lifespan.shutdown"})
        await stopped
        await task

    return shutdown


async def serve_asgi(app: ASGI, sock: socket.socket, stop: asyncio.Event) -> None:
    """Serve `app` on `sock` with BareAsgiProtocol until `stop` is set: lifespan start-up
    first, the port announced once the server listens, lifespan shut-down at the end."""
    loop = asyncio.get_running_loop()
    shutdown = await lifespan_startup(app)
    server = await loop.create_server(lambda: BareAsgiProtocol(app, loop), sock=sock)
    announce(sock)
    try:
        await stop.wait()
    finally:
        server.close()
        await shutdown()


def serve_bare_node(sock: socket.socket) -> None:
    """This node (`node_app`, from SYNTHORG_DATA_DIR) on BareAsgiProtocol, until SIGTERM or
    SIGINT."""
    import uvloop

    os.environ["SYNTHORG_BACKEND_PORT"] = str(sock.getsockname()[1])

    async def main() -> None:
        stop = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(signum, stop.set)
        await serve_asgi(node_app(), sock, stop)

    uvloop.run(main())


def listen() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    return sock


def announce(sock: socket.socket) -> None:
    print(json.dumps({"event": STARTED, "port": sock.getsockname()[1]}), file=sys.stderr,
          flush=True)


def serve_bare(sock: socket.socket) -> None:
    import uvloop

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(BareEchoProtocol, sock=sock)
        announce(sock)
        async with server:
            await server.serve_forever()

    uvloop.run(main())


def serve_uvicorn_echo(sock: socket.socket, stock: bool = False) -> None:
    """The echo under uvicorn with the node's own HTTP protocol class and default limits, or
    (`stock`) with uvicorn's own httptools protocol."""
    import uvicorn

    from synthorg.http.limits import DEFAULT_LIMITS
    from synthorg.http.protocol import protocol_class

    http: Any = "httptools" if stock else protocol_class(DEFAULT_LIMITS)
    config = uvicorn.Config(asgi_echo, log_level="warning", access_log=False, ws="none",
                            http=http, loop="uvloop", proxy_headers=False, lifespan="off")
    server = uvicorn.Server(config)
    announce(sock)
    server.run(sockets=[sock])


def node_app() -> Any:
    """This node's ASGI app, built from SYNTHORG_DATA_DIR as a worker of `serve --workers N`
    builds it, for a server command line's `--factory`. No start-up recovery: the bench's data
    dir is fresh (and a server may call this inside its running event loop)."""
    from synthorg.api.serve import settle_memory
    from synthorg.node import Node
    from synthorg.observability.log import LOG_LEVEL_ENV, configure_logging, log_level_from

    # The level `serve` logs at (info unless set): the node's own event lines are its cost.
    configure_logging(log_level_from(os.environ.get(LOG_LEVEL_ENV)))
    host = "127.0.0.1"
    node = Node.build(Path(os.environ["SYNTHORG_DATA_DIR"]), host)
    app = node.app((host, int(os.environ.get("SYNTHORG_BACKEND_PORT") or 0)))
    settle_memory()
    return app


SERVERS = {"uvicorn-echo": serve_uvicorn_echo,
           "uvicorn-stock-echo": lambda sock: serve_uvicorn_echo(sock, stock=True),
           "bare-echo": serve_bare,
           "bare-node": serve_bare_node}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SERVERS:
        sys.exit(f"usage: python -m bench.server_apps {{{'|'.join(SERVERS)}}}")
    SERVERS[sys.argv[1]](listen())
