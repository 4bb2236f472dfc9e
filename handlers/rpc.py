"""The JSON-RPC operations: steps 8-12 on the body the gateway admitted.

`POST /api/v1/a2a/` serves the company; `POST /api/v1/a2a/agents/{agent_id}/` is the same
pipeline with the call routed to one agent. The gateway has already refused ill-formed agent
ids; an id that names no agent answers 404 with -32012 before the body is parsed.
"""

from __future__ import annotations

import json
from typing import Any

from connexion import request
from connexion.lifecycle import ConnexionResponse

from synthorg.gateway.errors import UNKNOWN_AGENT, error_body
from synthorg.gateway.rpc import handle_rpc
from synthorg.gateway.transport import SCOPE_AGENT, SCOPE_BODY, SCOPE_PEER
from synthorg.observability.events.a2a import INBOUND_REJECTED
from synthorg.observability.log import emit


async def post() -> ConnexionResponse:
    scope = request.scope
    return await _answer(scope, None)


async def post_agent(agent_id: str) -> ConnexionResponse:
    # The gateway's copy of the id is authoritative: it is the segment it admitted.
    scope = request.scope
    agent: str = scope[SCOPE_AGENT]
    if agent not in scope["synthorg.node"].agent_ids:
        emit(INBOUND_REJECTED, level="warning", reason="unknown_agent", status=404,
             path=f"/api/v1/a2a/agents/{agent}/", peer_name=scope[SCOPE_PEER])
        return ConnexionResponse(
            status_code=404, body=error_body(UNKNOWN_AGENT, "Unknown agent"),
            content_type="application/json",
        )
    return await _answer(scope, agent)


async def _answer(scope: Any, agent: str | None) -> ConnexionResponse:
    status, envelope = await handle_rpc(
        scope[SCOPE_BODY], scope[SCOPE_PEER], scope["synthorg.node"], agent
    )
    return ConnexionResponse(
        status_code=status, body=json.dumps(envelope).encode(), content_type="application/json"
    )
