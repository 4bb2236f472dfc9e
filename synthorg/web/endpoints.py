"""Which endpoint serves each operation of the spec, keyed by its operationId.

The two JSON-RPC operations are the gateway itself (`synthorg.gateway.endpoint`); the card
and admin operations are the hand-written handlers, called with the typed context each
declares. `check_complete` holds this table to the spec: a node never starts with an
operation of its contract unserved, or serving one the contract does not have.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from starlette.responses import Response
from starlette.types import Scope

import handlers.admin
import handlers.cards
import handlers.health
import handlers.metrics
import handlers.push
from handlers.context import (
    AdminContext,
    CardsContext,
    HealthContext,
    HttpRequest,
    MetricsContext,
    PushReceiverContext,
)
from synthorg.admin.gate import SCOPE_ADMIN, SCOPE_ADMIN_BODY
from synthorg.gateway.rest import OPERATIONS_REST
from synthorg.generated import constants as spec
from synthorg.generated.constants import (
    ADMIN_ERROR_UNAUTHORIZED,
    MEDIA_TYPE_APPLICATION_JSON,
    OPERATIONS,
    Operation,
)
from synthorg.http.responses import admin_error
from synthorg.web.router import Endpoint, HttpCall
from synthorg.web.webhooks import SCOPE_PUSH_BODY

GATEWAY = "gateway"  # the JSON-RPC operations: served by the gateway endpoint
CardHandler = Callable[[HttpRequest, CardsContext], Awaitable[Response]]
AdminHandler = Callable[[HttpRequest, AdminContext], Awaitable[Response]]
HealthHandler = Callable[[HttpRequest, HealthContext], Awaitable[Response]]
MetricsHandler = Callable[[HttpRequest, MetricsContext], Awaitable[Response]]
PushHandler = Callable[[HttpRequest, PushReceiverContext], Awaitable[Response]]


def _card(handler: CardHandler, ctx: CardsContext) -> Endpoint:
    async def endpoint(scope: Scope, params: Mapping[str, str]) -> Response:
        return await handler(HttpCall(scope, params), ctx)

    return endpoint


def _health(handler: HealthHandler, ctx: HealthContext) -> Endpoint:
    async def endpoint(scope: Scope, params: Mapping[str, str]) -> Response:
        return await handler(HttpCall(scope, params), ctx)

    return endpoint


def _unauthorized() -> Response:
    body = admin_error(ADMIN_ERROR_UNAUTHORIZED, "Admin token required")
    return Response(body, 401, media_type=MEDIA_TYPE_APPLICATION_JSON, headers={
        "Cache-Control": "no-store", "WWW-Authenticate": 'Bearer realm="synthorg-admin"',
    })


class _MetricsOff:
    async def render(self) -> bytes | None:
        return None


def _metrics(handler: MetricsHandler, ctx: MetricsContext,
             admits: Callable[[Scope], bool]) -> Endpoint:
    async def endpoint(scope: Scope, params: Mapping[str, str]) -> Response:
        if not admits(scope):  # the admin token, unless metrics are public
            return _unauthorized()
        return await handler(HttpCall(scope, params), ctx)

    return endpoint


def _push(handler: PushHandler, ctx: PushReceiverContext) -> Endpoint:
    async def endpoint(scope: Scope, params: Mapping[str, str]) -> Response:
        return await handler(HttpCall(scope, params, scope.get(SCOPE_PUSH_BODY, b"")), ctx)

    return endpoint


def _admin(handler: AdminHandler, ctx: AdminContext) -> Endpoint:
    async def endpoint(scope: Scope, params: Mapping[str, str]) -> Response:
        if scope.get(SCOPE_ADMIN) is not True:  # only the admin gate admits: fail closed
            return _unauthorized()
        return await handler(HttpCall(scope, params, scope.get(SCOPE_ADMIN_BODY, b"")), ctx)

    return endpoint


def operation_endpoints(
    cards: CardsContext, admin: AdminContext, health: HealthContext, push: PushReceiverContext,
    metrics: tuple[MetricsContext, Callable[[Scope], bool]] | None = None,
) -> dict[Operation, Endpoint | str]:
    """Every operation of the spec -> its endpoint (GATEWAY for the JSON-RPC ones).
    `metrics`: what renders them, and who may read them (by default: off, nobody)."""
    metrics = metrics or (_MetricsOff(), lambda scope: False)
    table: dict[Operation, Endpoint | str] = {
        spec.METRICS_SCRAPE: _metrics(handlers.metrics.scrape, *metrics),
        spec.HEALTH_LIVE: _health(handlers.health.live, health),
        spec.HEALTH_READY: _health(handlers.health.ready, health),
        spec.GATEWAY_RPC: GATEWAY,
        spec.GATEWAY_AGENT_RPC: GATEWAY,
        **dict.fromkeys(OPERATIONS_REST, GATEWAY),  # the HTTP+JSON binding's routes
        spec.CARDS_COMPANY_CARD: _card(handlers.cards.company_card, cards),
        spec.CARDS_AGENT_CARD: _card(handlers.cards.agent_card, cards),
        spec.CARDS_JWKS: _card(handlers.cards.jwks, cards),
        spec.ADMIN_STATUS: _admin(handlers.admin.status, admin),
        spec.ADMIN_LIST_SETTINGS: _admin(handlers.admin.list_settings, admin),
        spec.ADMIN_GET_SETTING: _admin(handlers.admin.get_setting, admin),
        spec.ADMIN_PUT_SETTING: _admin(handlers.admin.put_setting, admin),
        spec.ADMIN_RESET_SETTING: _admin(handlers.admin.reset_setting, admin),
        spec.ADMIN_LIST_PEERS: _admin(handlers.admin.list_peers, admin),
        spec.ADMIN_CREATE_PEER: _admin(handlers.admin.create_peer, admin),
        spec.ADMIN_GET_PEER: _admin(handlers.admin.get_peer, admin),
        spec.ADMIN_REPLACE_PEER: _admin(handlers.admin.replace_peer, admin),
        spec.ADMIN_SET_PEER_RATE_LIMIT: _admin(handlers.admin.set_peer_rate_limit, admin),
        spec.ADMIN_SET_PEER_CARD_KEY: _admin(handlers.admin.set_peer_card_key, admin),
        spec.ADMIN_SET_PEER_BINDING: _admin(handlers.admin.set_peer_binding, admin),
        spec.ADMIN_DELETE_PEER: _admin(handlers.admin.delete_peer, admin),
        spec.ADMIN_PEER_ACTIVITY: _admin(handlers.admin.peer_activity, admin),
        spec.ADMIN_METRICS_SAMPLES: _admin(handlers.admin.metrics_samples, admin),
        spec.ADMIN_LIST_TASKS: _admin(handlers.admin.list_tasks, admin),
        spec.ADMIN_GET_TASK: _admin(handlers.admin.get_task, admin),
        spec.ADMIN_CANCEL_TASK: _admin(handlers.admin.cancel_task, admin),
        spec.ADMIN_TASK_EVENTS: _admin(handlers.admin.task_events, admin),
        spec.ADMIN_LIST_AUDIT: _admin(handlers.admin.list_audit, admin),
        spec.PUSH_RECEIVE: _push(handlers.push.receive, push),
    }
    check_complete(table)
    return table


def check_complete(table: Mapping[Operation, object]) -> None:
    missing = [op.operation_id for op in OPERATIONS if op not in table]
    extra = [op.operation_id for op in table if op not in OPERATIONS]
    if missing or extra:
        raise RuntimeError(f"operations without an endpoint: {missing}; not in the spec: {extra}")
