"""The app factory: one Connexion app behind the gateway middleware."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

# Connexion imports Starlette's test client at import time, which warns about httpx; the node
# never uses it.
warnings.filterwarnings("ignore", message=".*starlette.testclient.*")

from connexion import AsyncApp  # noqa: E402
from connexion.middleware import MiddlewarePosition  # noqa: E402
from connexion.middleware.context import ContextMiddleware  # noqa: E402
from connexion.middleware.exceptions import ExceptionMiddleware  # noqa: E402
from connexion.middleware.lifespan import LifespanMiddleware  # noqa: E402
from connexion.middleware.routing import RoutingMiddleware  # noqa: E402
from connexion.middleware.server_error import ServerErrorMiddleware  # noqa: E402
from starlette.types import ASGIApp, Receive, Scope, Send  # noqa: E402

from synthorg.admin.middleware import AdminMiddleware  # noqa: E402
from synthorg.api.connexion_compat import allow_openapi_31  # noqa: E402
from synthorg.api.spec_routes import SpecRoutes  # noqa: E402
from synthorg.contract.spec import bundled_openapi  # noqa: E402
from synthorg.gateway.transport import GatewayMiddleware  # noqa: E402
from synthorg.node import Node  # noqa: E402

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
    # The admin API (/api/v1/admin/): the operator's token, on headers, before any body byte.
    app.add_middleware(
        AdminMiddleware,
        position=MiddlewarePosition.BEFORE_EXCEPTION,
        token_provider=lambda: node.admin_token,
    )
    # The published contract and /docs: public, served whether or not the gateway is on.
    app.add_middleware(
        SpecRoutes, position=MiddlewarePosition.BEFORE_EXCEPTION, document=bundled_openapi()
    )
    return app
