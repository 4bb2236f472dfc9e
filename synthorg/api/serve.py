"""Start a node from the environment: SYNTHORG_DATA_DIR, SYNTHORG_BACKEND_HOST/PORT."""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import sys
from pathlib import Path

from synthorg.a2a.config import CONFIG_FILE, ConfigError
from synthorg.node import Node, is_loopback
from synthorg.observability.events import a2a as events
from synthorg.observability.events import admin as admin_events
from synthorg.observability.log import configure_logging, emit
from synthorg.paths import data_dir_from_env
from synthorg.store.db import SchemaVersionError
from synthorg.store.secretbox import SecretBoxError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def serve(data_dir: Path, host: str, port: int) -> int:
    # Imported here: the web stack is heavy and CLI commands that do not serve skip it.
    import uvicorn

    from synthorg.api.app import create_app
    from synthorg.http import uvicorn_options

    configure_logging(os.environ.get("SYNTHORG_LOG_LEVEL", "info"))
    try:
        node = Node.build(data_dir, host)
        # Recover before announcing the node: a task left working by a previous run is
        # failed before anyone can ask about it.
        asyncio.run(node.startup())
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (OSError, sqlite3.Error, SecretBoxError, SchemaVersionError) as exc:
        print(f"error: cannot open the data dir {data_dir}: {exc}", file=sys.stderr)
        return 2
    if node.config.source is None:
        print(
            f"no {data_dir / CONFIG_FILE}: starting with defaults (a2a disabled)", file=sys.stderr
        )
    _announce_admin_token(node, host)
    try:
        sock = _listen(host, port)
    except OSError as exc:
        print(f"error: cannot listen on {host}:{port}: {exc.strerror}", file=sys.stderr)
        node.close()
        return 2
    # The socket is listening before this line is written, so a supervisor (or a test) may
    # connect as soon as it reads the event; port 0 picks a free port and reports it here.
    emit(
        events.NODE_STARTED,
        host=host,
        port=sock.getsockname()[1],
        data_dir=str(data_dir),
        a2a_enabled=node.enabled,
        allowed_peers=sorted(node.config.allowed_peers),
    )
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(node),
            log_level="warning",
            access_log=False,
            lifespan="on",
            **uvicorn_options(node.config.server),  # connection limits (synthorg.http)
        )
    )
    try:
        server.run(sockets=[sock])
    finally:
        node.close()
    return 0


def _announce_admin_token(node: Node, host: str) -> None:
    """Say where the operator's admin token is; never the token itself."""
    token = node.admin_token
    if token.path is None:
        where = "from SYNTHORG_ADMIN_TOKEN"
    else:
        where = f"in {token.path} (mode 0600{', generated now' if token.created else ''})"
    print(f"admin API token: {where}", file=sys.stderr)
    emit(
        admin_events.TOKEN_READY,
        source=token.source,
        path=None if token.path is None else str(token.path),
        created=token.created,
    )
    if not is_loopback(host):
        emit(
            admin_events.NON_LOOPBACK,
            level="warning",
            host=host,
            reason="the admin API (/api/v1/admin/) shares this socket and sends its bearer token "
            "in the clear over plain HTTP: put TLS in front of the node, or keep "
            "/api/v1/admin/ off the public listener",
        )


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def serve_from_env() -> int:
    host = os.environ.get("SYNTHORG_BACKEND_HOST") or DEFAULT_HOST
    raw_port = os.environ.get("SYNTHORG_BACKEND_PORT") or str(DEFAULT_PORT)
    if not raw_port.isdigit() or not 0 <= int(raw_port) <= 65535:
        print(f"error: SYNTHORG_BACKEND_PORT: {raw_port!r} is not a port number", file=sys.stderr)
        return 2
    return serve(data_dir_from_env(), host, int(raw_port))
