"""One worker process of a node started with several: its app, built from the environment.

The supervisor (`synthorg.api.serve`) has already checked the config, migrated the store and
recovered unfinished tasks; a worker only builds its own node on the same data dir. A worker
that cannot do that exits, and the supervisor stops rather than restart it in a loop.
"""

from __future__ import annotations

import os

from synthorg.api.app import NodeApp
from synthorg.http.limits import ServerLimits
from synthorg.http.protocol import LimitedHttpToolsProtocol
from synthorg.node import Node
from synthorg.observability.log import configure_logging
from synthorg.paths import data_dir_from_env


def create_app() -> NodeApp:
    configure_logging(os.environ.get("SYNTHORG_LOG_LEVEL", "info"))
    host = os.environ.get("SYNTHORG_BACKEND_HOST") or "127.0.0.1"
    node = Node.build(data_dir_from_env(), host)
    LimitedHttpToolsProtocol.limits = ServerLimits.from_config(node.config.server)
    return node.app()
