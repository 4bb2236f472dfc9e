"""One worker process of a node started with several: its app, built from the environment.

On SQLite the supervisor (`synthorg.api.serve`) has already checked the config, migrated the
store and recovered unfinished tasks; a worker only builds its own node on the same data dir.
On PostgreSQL each worker reaches the database itself, as a replica does. A worker
that cannot do that exits, and the supervisor stops rather than restart it in a loop. A
worker also ends when its supervisor does, however the supervisor ended (`kill -9`
included), so no orphan keeps serving on the node's port.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from pathlib import Path

from uvicorn.config import STARTUP_FAILURE

from synthorg.api.serve import WORKERS_ENV, boot_shared, settle_memory
from synthorg.http.limits import ServerLimits
from synthorg.http.protocol import LimitedHttpToolsProtocol
from synthorg.node import Node, prepare
from synthorg.observability.log import configure_logging
from synthorg.observability.log import flush as flush_log
from synthorg.paths import data_dir_from_env
from synthorg.store.select import open_stores, runner_from_env, uses_postgres
from synthorg.web.app import NodeApp
from synthorg.web.starting import StartingApp

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def create_app() -> NodeApp | StartingApp:
    _end_with_supervisor()
    configure_logging(os.environ.get("SYNTHORG_LOG_LEVEL", "info"))
    host = os.environ.get("SYNTHORG_BACKEND_HOST") or "127.0.0.1"
    data_dir = data_dir_from_env()
    if uses_postgres():
        return _shared(data_dir, host)
    node = Node.build(data_dir, host)
    LimitedHttpToolsProtocol.limits = ServerLimits.from_config(node.config.server)
    app = node.app((host, int(os.environ.get("SYNTHORG_BACKEND_PORT") or 0)))
    settle_memory()
    return app


def _shared(data_dir: Path, host: str) -> StartingApp:
    """On PostgreSQL each worker reaches the database itself, in its own event loop, like a
    replica (the supervisor checked everything that needs no database), and says
    `a2a.node.started` once it serves."""
    setup = prepare(data_dir, host)
    LimitedHttpToolsProtocol.limits = ServerLimits.from_config(setup.config.server)
    stores = open_stores(data_dir, runner_from_env(), migrate=False)
    port = int(os.environ.get("SYNTHORG_BACKEND_PORT") or 0)  # the port the supervisor bound
    workers = int(os.environ.get(WORKERS_ENV) or 1)

    def fatal(message: str) -> None:
        flush_log()  # the lines before it: os._exit runs no exit handlers
        print(f"error: {message}", file=sys.stderr, flush=True)
        os._exit(STARTUP_FAILURE)  # the supervisor stops rather than restart it in a loop

    app = StartingApp(lambda: boot_shared(setup, stores, host, port, workers, fatal))
    settle_memory()
    return app


def _end_with_supervisor() -> None:
    """Ask the kernel for SIGTERM when the supervisor dies (Linux; elsewhere a no-op)."""
    supervisor = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if os.getppid() != supervisor:  # it died before the request was made
        os.kill(os.getpid(), signal.SIGTERM)
