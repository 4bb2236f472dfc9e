"""The apps `bench.server_choice` serves with each candidate HTTP server.

The floor of every server is one JSON-RPC echo (`echo_answer`: parse the body, answer a result
carrying the request's params), written against each interface with nothing else around it:
raw ASGI (`asgi_echo`, for uvicorn and Granian), RSGI (`rsgi_echo`, Granian's own interface)
and a bare asyncio protocol on httptools and uvloop (`BareEchoProtocol`: no server library at
all, the lowest a Python server can go). `node_app` is this node built from the environment,
as a worker of `serve --workers N` builds it, for a server other than uvicorn.

    python -m bench.server_apps uvicorn-echo   # uvicorn + the node's protocol class, echo
    python -m bench.server_apps uvicorn-stock-echo  # uvicorn + its own httptools protocol
    python -m bench.server_apps bare-echo      # httptools + uvloop, echo

Each entry point binds 127.0.0.1:0 and writes the `bench.server.started` line with the port
once the socket listens, as `bench.serve` does. Granian is started by its own command line
(`bench.server_choice`) on a port picked beforehand.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

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
           "bare-echo": serve_bare}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SERVERS:
        sys.exit(f"usage: python -m bench.server_apps {{{'|'.join(SERVERS)}}}")
    SERVERS[sys.argv[1]](listen())
