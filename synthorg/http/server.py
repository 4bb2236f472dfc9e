"""What the node hands `uvicorn.Config` so its connections are bounded (see protocol.py)."""

from __future__ import annotations

import resource
from typing import Any

from synthorg.generated.models import ServerConfig
from synthorg.http.limits import ServerLimits
from synthorg.http.protocol import protocol_class
from synthorg.observability.events.server import FD_LIMIT_LOW
from synthorg.observability.log import emit

# Descriptors the process needs besides its client connections: the listening socket, the
# store, outbound calls to peers, the standard streams, imports.
FD_RESERVE = 256


def uvicorn_options(config: ServerConfig) -> dict[str, Any]:
    """Keyword arguments for `uvicorn.Config`, on top of the app and its lifespan."""
    limits = ServerLimits.from_config(config)
    ensure_fd_headroom(limits.max_connections)
    return {
        "http": protocol_class(limits),
        # The node serves no WebSocket; an upgrade would leave these limits behind.
        "ws": "none",
        # uvicorn trusts X-Forwarded-Proto/-For from loopback by default: a local caller could
        # then turn the socket's scheme (the card url's fallback) and the client address (the
        # audit trail's) into values of its choosing. The node reads its own socket.
        "proxy_headers": False,
        "timeout_keep_alive": limits.keepalive_timeout,
        # No handlers of uvicorn's own: its records reach the event stream as `server.log`
        # lines through the root handler `configure_logging` installs.
        "log_config": None,
    }


def ensure_fd_headroom(max_connections: int) -> None:
    """Raise the soft open-file limit so `max_connections` can be reached; warn if it cannot.

    Otherwise accept() would fail for lack of descriptors (EMFILE) before the limit is met,
    and every new peer would be refused without an answer.
    """
    wanted = max_connections + FD_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    except (ValueError, OSError):
        pass
    if soft < wanted:
        emit(
            FD_LIMIT_LOW,
            level="warning",
            max_connections=max_connections,
            fd_limit=soft,
            needed=wanted,
        )
