"""One worker process of a node started with several: its app, built from the environment.

The supervisor (`synthorg.api.serve`) has already checked the config, migrated the store and
recovered unfinished tasks; a worker only builds its own node on the same data dir. A worker
that cannot do that exits, and the supervisor stops rather than restart it in a loop. A
worker also ends when its supervisor does, however the supervisor ended (`kill -9`
included), so no orphan keeps serving on the node's port.
"""

from __future__ import annotations

import ctypes
import os
import signal

from synthorg.api.serve import settle_memory
from synthorg.http.limits import ServerLimits
from synthorg.http.protocol import LimitedHttpToolsProtocol
from synthorg.node import Node
from synthorg.observability.log import configure_logging
from synthorg.paths import data_dir_from_env
from synthorg.web.app import NodeApp

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def create_app() -> NodeApp:
    _end_with_supervisor()
    configure_logging(os.environ.get("SYNTHORG_LOG_LEVEL", "info"))
    host = os.environ.get("SYNTHORG_BACKEND_HOST") or "127.0.0.1"
    node = Node.build(data_dir_from_env(), host)
    LimitedHttpToolsProtocol.limits = ServerLimits.from_config(node.config.server)
    app = node.app()
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
