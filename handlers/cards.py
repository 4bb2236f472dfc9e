"""The card operations: GET /.well-known/agent-card.json and the per-agent card.

Unauthenticated by design (peers read them before they federate). Cards are rendered once and
served with `Cache-Control`, a strong `ETag` and 304 on `If-None-Match`; see
`synthorg.cards.publisher` for where the card `url` comes from.
"""

from __future__ import annotations

import json

from connexion import request
from connexion.lifecycle import ConnexionResponse

from synthorg.cards.agent_ids import is_agent_id
from synthorg.cards.http_cache import none_match
from synthorg.cards.publisher import CACHE_CONTROL, RenderedCard


async def company_card() -> ConnexionResponse:
    node = request.scope["synthorg.node"]
    if not node.enabled:
        return _disabled()
    cards = node.cards
    return _card(cards.company(cards.base_url(request.scope)))


async def agent_card(agent_id: str) -> ConnexionResponse:
    node = request.scope["synthorg.node"]
    if not node.enabled:
        return _disabled()
    if not is_agent_id(agent_id):
        return _error(400, "invalid_agent_id", "Not a well-formed agent id")
    cards = node.cards
    rendered = cards.agent(agent_id, cards.base_url(request.scope))
    if rendered is None:
        return _error(404, "unknown_agent", "No agent has this id")
    return _card(rendered)


def _card(rendered: RenderedCard) -> ConnexionResponse:
    headers = {"Cache-Control": CACHE_CONTROL, "ETag": rendered.etag}
    # Several If-None-Match headers form one list, as if joined by commas.
    if none_match(", ".join(request.headers.getlist("if-none-match")), rendered.etag):
        return ConnexionResponse(status_code=304, headers=headers)
    return ConnexionResponse(
        status_code=200, body=rendered.body, content_type="application/json", headers=headers
    )


def _disabled() -> ConnexionResponse:
    # Like the JSON-RPC routes: a node whose gateway is off advertises nothing.
    return _error(404, "gateway_disabled", "The A2A gateway is disabled on this node")


def _error(status: int, error: str, message: str) -> ConnexionResponse:
    return ConnexionResponse(
        status_code=status,
        body=json.dumps({"error": error, "message": message}).encode(),
        content_type="application/json",
        headers={"Cache-Control": "no-store"},
    )
