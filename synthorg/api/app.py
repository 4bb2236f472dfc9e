"""The app factory: one Connexion app behind the gateway middleware."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from connexion import AsyncApp
from connexion.middleware import MiddlewarePosition
from connexion.middleware.context import ContextMiddleware
from connexion.middleware.exceptions import ExceptionMiddleware
from connexion.middleware.lifespan import LifespanMiddleware
from connexion.middleware.routing import RoutingMiddleware
from connexion.middleware.server_error import ServerErrorMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from synthorg.a2a.transport import GatewayMiddleware
from synthorg.api.connexion_compat import allow_openapi_31
from synthorg.node import Node
from synthorg.spec import bundled_openapi

# No Connexion security or validation middleware: the gateway runs the three gates on headers
# before any body byte is read, and params are validated by the generated pydantic models.
_MIDDLEWARES = [
    ServerErrorMiddleware,
    ExceptionMiddleware,
    RoutingMiddleware,
    LifespanMiddleware,
    ContextMiddleware,
]


class _NodeScope:
    """Hands the node to handlers through the ASGI scope: explicit, no globals."""

    def __init__(self, app: ASGIApp, node: Node) -> None:
        self.app, self.node = app, node

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope = {**scope, "synthorg.node": self.node}
        await self.app(scope, receive, send)


def create_app(node: Node) -> AsyncApp:
    allow_openapi_31()

    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        await node.startup()
        yield

    app = AsyncApp(__name__, middlewares=list(_MIDDLEWARES), lifespan=lifespan)
    app.add_api(bundled_openapi(), validate_responses=False)
    app.add_middleware(
        GatewayMiddleware,
        position=MiddlewarePosition.BEFORE_EXCEPTION,
        settings_provider=lambda: node,
    )
    app.add_middleware(_NodeScope, position=MiddlewarePosition.BEFORE_EXCEPTION, node=node)
    return app
