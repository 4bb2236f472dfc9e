"""The app a node serves while it cannot serve yet: its shared store is not reachable.

A replica on PostgreSQL listens at once, so its orchestrator can probe it: `/healthz` answers
200 (the process serves) and `/readyz` 503, as does every other path (with `Retry-After`),
until the node's start-up work (reach the store, migrate, recover) is done. Then every
request goes to the node's own app. The start-up work runs in the server's event loop and is
retried with backoff by whoever passes it in (`synthorg.api.serve`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from starlette.types import Receive, Scope, Send

from synthorg import jsonrpc
from synthorg.generated.constants import (
    GATEWAY_RPC,
    HEALTH_LIVE,
    HEALTH_STATUS_OK,
    HEALTH_STATUS_UNAVAILABLE,
    INTERNAL_ERROR,
)
from synthorg.http.responses import JSON, health_json, send_bytes
from synthorg.web.app import NodeApp

_OK = health_json(HEALTH_STATUS_OK)
_UNAVAILABLE = health_json(HEALTH_STATUS_UNAVAILABLE)
# The JSON-RPC paths answer in their own form; nothing more is said than "not now".
_RPC_UNAVAILABLE = jsonrpc.error(INTERNAL_ERROR)
_HEADERS = [JSON, (b"cache-control", b"no-store"), (b"retry-after", b"1")]
_RPC_PREFIX = GATEWAY_RPC.path.rstrip("/")


Booted = tuple[NodeApp, Callable[[], None]]  # the node's app, and how it says it serves


class StartingApp:
    def __init__(self, boot: Callable[[], Awaitable[Booted]]) -> None:
        self._boot = boot
        self.app: NodeApp | None = None
        self._booting: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        app = self.app
        if app is not None:
            await app(scope, receive, send)
            return
        if kind != "http":
            return
        path = scope["path"]
        if path == HEALTH_LIVE.path:
            await send_bytes(send, 200, _OK, _HEADERS[:2])
        elif path.startswith(_RPC_PREFIX):
            await send_bytes(send, 503, _RPC_UNAVAILABLE, _HEADERS)
        else:  # /readyz and everything else
            await send_bytes(send, 503, _UNAVAILABLE, _HEADERS)

    async def _start(self) -> None:
        app, announce = await self._boot()
        if app.on_start is not None:
            await app.on_start()
        self.app = app
        announce()  # only now: a client that reads it finds the node serving

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._booting = asyncio.get_running_loop().create_task(self._start())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._booting is not None and not self._booting.done():
                    self._booting.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await self._booting
                if self.app is not None and self.app.on_stop is not None:
                    with contextlib.suppress(Exception):
                        await self.app.on_stop()
                await send({"type": "lifespan.shutdown.complete"})
                return
