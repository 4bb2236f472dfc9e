"""The JSON-RPC operation (POST /api/v1/a2a/): steps 8-12 on the body the gateway admitted."""

from __future__ import annotations

import json

from connexion import request
from connexion.lifecycle import ConnexionResponse

from synthorg.a2a.rpc import handle_rpc


async def post() -> ConnexionResponse:
    scope = request.scope
    status, envelope = await handle_rpc(
        scope["synthorg.body"], scope["synthorg.peer"], scope["synthorg.node"]
    )
    return ConnexionResponse(
        status_code=status, body=json.dumps(envelope).encode(), content_type="application/json"
    )
