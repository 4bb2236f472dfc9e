"""The HTTP server below the ASGI app: per-connection limits on size, time and count.

`uvicorn_options(config.server)` is what the node passes to `uvicorn.Config`; the mechanism is
in `protocol.py`, the limits in `limits.py`.
"""

from __future__ import annotations

from synthorg.http.server import uvicorn_options

__all__ = ["uvicorn_options"]
