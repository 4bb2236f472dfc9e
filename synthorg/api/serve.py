"""Start a node: check and prepare once, listen, then serve in one or several processes.

`serve` runs the start-up work exactly once, before the socket listens: the config and the
data dir are checked, the store migrated, unfinished tasks recovered and the operator warned
of what needs attention. With `workers` > 1 the listening socket is shared by that many
worker processes (uvicorn's supervisor restarts one that dies); each builds its own node on
the same data dir, and everything they share (tasks, idempotency keys, the catalog, the
settings) is serialised in the store, not in a process.
"""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import sqlite3
import sys
from pathlib import Path

from synthorg.config.company import CONFIG_FILE, ConfigError
from synthorg.node import Node, is_loopback
from synthorg.observability.events import a2a as events
from synthorg.observability.events import admin as admin_events
from synthorg.observability.log import configure_logging, emit
from synthorg.paths import data_dir_from_env
from synthorg.store.secretbox import SecretBoxError
from synthorg.store.sqlite.schema import SchemaVersionError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
WORKERS_ENV = "SYNTHORG_WORKERS"
MAX_WORKERS = 64
WORKER_APP = "synthorg.api.worker:create_app"
BACKLOG = 2048


def serve(data_dir: Path, host: str, port: int, workers: int = 1) -> int:
    # Imported here: the web stack is heavy and CLI commands that do not serve skip it.
    import uvicorn

    from synthorg.api.supervisor import SocketPerWorker, listen_many
    from synthorg.http import uvicorn_options

    configure_logging(os.environ.get("SYNTHORG_LOG_LEVEL", "info"))
    try:
        node = Node.build(data_dir, host)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (OSError, sqlite3.Error, SecretBoxError, SchemaVersionError) as exc:
        print(f"error: cannot open the data dir {data_dir}: {exc}", file=sys.stderr)
        return 2
    try:
        # Recover before announcing the node: a task left working by a previous run is
        # failed before anyone can ask about it.
        asyncio.run(node.recover())
        node.warn_at_start(host)
        if node.config.source is None:
            print(f"no {data_dir / CONFIG_FILE}: starting with defaults (a2a disabled)",
                  file=sys.stderr)
        _announce_admin_token(node, host)
        try:
            sock = _listen(host, port, workers)
            # Every worker's socket listens before the node says it is started.
            sockets = [sock] if workers == 1 else listen_many(sock, workers, BACKLOG)
        except OSError as exc:
            print(f"error: cannot listen on {host}:{port}: {exc.strerror}", file=sys.stderr)
            return 2
        # The socket is listening before this line is written, so a supervisor (or a test)
        # may connect as soon as it reads the event; port 0 picks a free port, reported here.
        emit(
            events.NODE_STARTED,
            host=host,
            port=sock.getsockname()[1],
            data_dir=str(data_dir),
            a2a_enabled=node.enabled,
            allowed_peers=sorted(node.config.allowed_peers),
            workers=workers,
        )
        options = {
            "log_level": "warning",
            "access_log": False,
            "lifespan": "on",
            **uvicorn_options(node.config.server),  # connection limits (synthorg.http)
        }
        if workers == 1:
            server = uvicorn.Server(uvicorn.Config(node.app(), **options))
            settle_memory()
            server.run(sockets=[sock])
            return 0
    finally:
        node.close()
    # Each worker builds its node from the environment (spawned processes share nothing).
    os.environ["SYNTHORG_DATA_DIR"] = str(data_dir)
    os.environ["SYNTHORG_BACKEND_HOST"] = host
    config = uvicorn.Config(WORKER_APP, factory=True, workers=workers, **options)
    SocketPerWorker(config, sockets).run()
    return 0


def settle_memory() -> None:
    """Keep the collector's pauses short and rare once the app is built.

    Everything allocated at start-up (the spec, the models, the app) lives as long as the
    process: frozen, the collector never walks it again. A request allocates a few hundred
    tracked objects and frees nearly all of them at once, so collections can be rarer.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


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


def _listen(host: str, port: int, workers: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if workers > 1:  # each worker gets a socket of its own on this port (api/supervisor.py)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(BACKLOG)
    sock.set_inheritable(True)
    return sock


def workers_from(raw: str | None) -> int:
    """A worker count (1 when unset); ValueError naming the bound otherwise."""
    if raw is None or raw == "":
        return 1
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_WORKERS:
        raise ValueError(f"{raw!r} is not a worker count (1-{MAX_WORKERS})")
    return int(raw)


def serve_from_env() -> int:
    host = os.environ.get("SYNTHORG_BACKEND_HOST") or DEFAULT_HOST
    raw_port = os.environ.get("SYNTHORG_BACKEND_PORT") or str(DEFAULT_PORT)
    if not raw_port.isdigit() or not 0 <= int(raw_port) <= 65535:
        print(f"error: SYNTHORG_BACKEND_PORT: {raw_port!r} is not a port number", file=sys.stderr)
        return 2
    try:
        workers = workers_from(os.environ.get(WORKERS_ENV))
    except ValueError as exc:
        print(f"error: {WORKERS_ENV}: {exc}", file=sys.stderr)
        return 2
    return serve(data_dir_from_env(), host, int(raw_port), workers)
