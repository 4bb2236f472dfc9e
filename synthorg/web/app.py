"""The node's ASGI app: the JSON-RPC gateway on its own path, everything else routed.

    /api/v1/a2a...      the gateway (synthorg.gateway.endpoint): gates, body, pipeline
    /openapi.*, /spec/, /docs   the published contract (synthorg.web.spec_routes)
    /api/v1/admin/...   the admin gate (synthorg.admin.gate), then the admin operations
    /api/v1/webhooks/.. signed pushes: the body buffered (synthorg.web.webhooks), then verified
    /console...         the operator console (synthorg.console), when it is on
    anything else       the card operations, or 404 / 405

No framework sits on the hot path: the gateway is reached by one string comparison.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from synthorg.admin.gate import AdminGate
from synthorg.admin.token import AdminToken
from synthorg.gateway.endpoint import Gateway
from synthorg.generated.constants import GATEWAY_RPC, Operation
from synthorg.http.responses import send_bytes
from synthorg.web.router import Endpoint, Router
from synthorg.web.spec_routes import SpecRoutes
from synthorg.web.webhooks import WebhookBodies

RPC_PREFIX = GATEWAY_RPC.path.rstrip("/")
CONSOLE_PREFIX = "/console"  # synthorg.console.app.PREFIX (the console imports web, not back)


def is_console_path(path: str) -> bool:
    return path == CONSOLE_PREFIX or path.startswith(CONSOLE_PREFIX + "/")


class NodeApp:
    def __init__(
        self,
        gateway: Gateway,
        operations: Mapping[Operation, Endpoint | str],
        admin_token: AdminToken,
        document: Mapping[str, Any],
        on_start: Callable[[], Awaitable[None]] | None = None,
        on_stop: Callable[[], Awaitable[None]] | None = None,
        max_push_body: int = 1024 * 1024,
        console: ASGIApp | None = None,
    ) -> None:
        self._gateway: ASGIApp = gateway
        self.on_start, self.on_stop = on_start, on_stop
        # The gateway serves its operations itself; the router serves the others.
        router = Router({op: ep for op, ep in operations.items() if not isinstance(ep, str)})
        self._console = console
        self._others: ASGIApp = SpecRoutes(
            AdminGate(WebhookBodies(router, max_push_body), token_provider=lambda: admin_token),
            document=document,
        )

    def observed(self, wrap: Callable[[ASGIApp], ASGIApp]) -> NodeApp:
        """Every HTTP request through `wrap` (synthorg.observability.access)."""
        self._gateway, self._others = wrap(self._gateway), wrap(self._others)
        if self._console is not None:
            self._console = wrap(self._console)
        return self

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            if scope["path"].startswith(RPC_PREFIX):
                await self._gateway(scope, receive, send)
            elif self._console is not None and is_console_path(scope["path"]):
                await self._console(scope, receive, send)
            elif self._console is not None and scope["path"] == "/" and scope["method"] in (
                    "GET", "HEAD"):
                # With the console on, a browser at the root lands on it (not on /docs);
                # relative, so a path prefix in front of the node keeps working.
                await send_bytes(send, 302, b"This is an A2A node; its console is at /console.\n",
                                 [(b"content-type", b"text/plain; charset=utf-8"),
                                  (b"cache-control", b"no-cache"), (b"location", b"console")])
            else:
                await self._others(scope, receive, send)
        elif kind == "lifespan":
            await lifespan(receive, send, self.on_start, self.on_stop)


async def lifespan(receive: Receive, send: Send, on_start: Callable[[], Awaitable[None]] | None,
                   on_stop: Callable[[], Awaitable[None]] | None) -> None:
    """Start-up work (the config, the store, recovery) runs before the socket listens
    (synthorg.api.serve); here the process only starts and stops its background work (the
    runner's lease)."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            if on_start is not None:
                await on_start()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            if on_stop is not None:
                await on_stop()
            await send({"type": "lifespan.shutdown.complete"})
            return
