"""Serve one ASGI app with uvicorn on a free loopback port, for the bench's baseline servers.

The socket is bound and listening before the `bench.server.started` event (one JSON line on
stderr, with the port) is written, as the node does with `a2a.node.started`. uvicorn runs with
the node's settings: default loop and HTTP parser, log level warning, no access log.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Callable
from typing import Any

import uvicorn

STARTED = "bench.server.started"
RPC_PATH = "/api/v1/a2a/"


def serve(build: Callable[[str], Any]) -> None:
    """Bind 127.0.0.1:0, build the app for its base URL, announce the port, serve until
    SIGTERM or SIGINT."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    port = sock.getsockname()[1]
    app = build(f"http://127.0.0.1:{port}")
    print(json.dumps({"event": STARTED, "port": port}), file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
