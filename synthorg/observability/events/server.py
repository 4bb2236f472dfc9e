"""Event names of the HTTP server itself (below the ASGI app)."""

from __future__ import annotations

from typing import Final

# A record logged by uvicorn or another library, re-emitted as an event line: `level`,
# `logger`, `message` (clipped) and, for an exception, only its type (`exc_type`).
SERVER_LOG: Final = "server.log"
# At start: the open-file limit is too low for server.max_connections and could not be raised.
FD_LIMIT_LOW: Final = "server.fd_limit_low"
