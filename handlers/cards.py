"""The card operations: GET /.well-known/agent-card.json, the per-agent card, and the JWKS of
the keys that sign them (/.well-known/jwks.json).

Unauthenticated by design (peers read them before they federate). Cards are rendered once and
served with `Cache-Control`, a strong `ETag` and 304 on `If-None-Match`.

`A2A-Version: 1.0` (1.0.x) picks the card's 1.0-only document, `0.3` (0.3.x) its 0.3-only
one; absent, or any other value, the combined one (0.3's members and 1.0's), which both
dialects' SDKs parse. The answer varies with that header, and says so (`Vary`), so a shared
cache keeps them apart.
"""

from __future__ import annotations

from starlette.responses import Response

from handlers.context import CardDocument, CardsContext, HttpRequest
from synthorg.generated.constants import (
    A2A_VERSION_HEADER,
    A2A_VERSIONS,
    CARD_ERROR_GATEWAY_DISABLED,
    CARD_ERROR_INVALID_AGENT_ID,
    CARD_ERROR_UNKNOWN_AGENT,
    IF_NONE_MATCH_HEADER,
    MEDIA_TYPE_APPLICATION_JSON,
)
from synthorg.generated.models import CardError
from synthorg.http.caching import none_match
from synthorg.http.responses import error_json
from synthorg.http.version import major_minor
from synthorg.names import is_agent_id


async def company_card(request: HttpRequest, ctx: CardsContext) -> Response:
    if not ctx.enabled:
        return _disabled()
    return _card(request, ctx, ctx.company(request, _version(request)))


async def agent_card(request: HttpRequest, ctx: CardsContext) -> Response:
    if not ctx.enabled:
        return _disabled()
    agent_id = request.path_params["agent_id"]
    if not is_agent_id(agent_id):
        return _error(400, CARD_ERROR_INVALID_AGENT_ID, "Not a well-formed agent id")
    rendered = ctx.agent(agent_id, request, _version(request))
    if rendered is None:
        return _error(404, CARD_ERROR_UNKNOWN_AGENT, "No agent has this id")
    return _card(request, ctx, rendered)


async def jwks(request: HttpRequest, ctx: CardsContext) -> Response:
    """The public keys that sign the cards; 404 like the cards while the gateway is off."""
    document = ctx.jwks() if ctx.enabled else None
    if document is None:
        return _disabled()
    return _card(request, ctx, document, vary=False)


_VERSION_HEADER = A2A_VERSION_HEADER.lower()


def _version(request: HttpRequest) -> str | None:
    """The A2A version whose document the request asks for; None: the default one."""
    values = request.header_values(_VERSION_HEADER)
    # One value only: a repeated header names no one version.
    if len(values) != 1:
        return None
    version = major_minor(values[0])
    return version if version in A2A_VERSIONS else None


def _card(
    request: HttpRequest, ctx: CardsContext, rendered: CardDocument, vary: bool = True
) -> Response:
    headers = {"Cache-Control": ctx.cache_control, "ETag": rendered.etag}
    if vary:
        headers["Vary"] = A2A_VERSION_HEADER
    # Several If-None-Match headers form one list, as if joined by commas.
    if none_match(", ".join(request.header_values(IF_NONE_MATCH_HEADER)), rendered.etag):
        return Response(status_code=304, headers=headers)
    return Response(rendered.body, media_type=MEDIA_TYPE_APPLICATION_JSON, headers=headers)


def _disabled() -> Response:
    # Like the JSON-RPC routes: a node whose gateway is off advertises nothing.
    return _error(404, CARD_ERROR_GATEWAY_DISABLED, "The A2A gateway is disabled on this node")


def _error(status: int, error: str, message: str) -> Response:
    return Response(
        error_json(CardError.model_validate({"error": error, "message": message})),
        status_code=status,
        media_type=MEDIA_TYPE_APPLICATION_JSON,
        headers={"Cache-Control": "no-store"},
    )
