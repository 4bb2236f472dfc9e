"""POST /api/v1/webhooks/{peer}/a2a_push: a signed push from a federation member.

Unauthenticated by the gates: the signature is the credential, or (A2A's form, without a
signature) the Authorization header or X-A2A-Notification-Token this node registered for the
delegation, or for a peer of scheme mtls the pinned client certificate of the connection
(`synthorg.push.receiver`). 204 once verified (and
applied); 401 when it cannot be verified, 409 for a delivery id already received, 400 for a
verified body that is not a Task; each refusal is an event naming its reason.
"""

from __future__ import annotations

from starlette.responses import Response

from handlers.context import HttpRequest, PushReceiverContext
from synthorg.generated.constants import (
    MEDIA_TYPE_APPLICATION_JSON,
    PUSH_REFUSAL_INVALID_BODY,
    PUSH_REFUSAL_REPLAYED,
    PUSH_REFUSAL_UNAUTHORIZED,
)
from synthorg.generated.models import PushRefusal
from synthorg.http.responses import error_json
from synthorg.push.signing import (
    DELIVERY_ID_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    TOKEN_HEADER,
)

_HEADERS = {"Cache-Control": "no-store"}
_ERRORS = {
    400: PUSH_REFUSAL_INVALID_BODY, 401: PUSH_REFUSAL_UNAUTHORIZED, 409: PUSH_REFUSAL_REPLAYED,
}
_MESSAGES = {
    400: "The push is not a Task",
    401: "The push cannot be verified",
    409: "This delivery id was already received",
}


def _single(request: HttpRequest, name: str) -> str | None:
    values = request.header_values(name.lower())
    return values[0] if len(values) == 1 else None  # a repeated header: unverifiable


def _credential(request: HttpRequest, name: str) -> str | None:
    """None when absent; a repeated one is "", which matches nothing (each sent must match)."""
    values = request.header_values(name.lower())
    return None if not values else values[0] if len(values) == 1 else ""


async def receive(request: HttpRequest, ctx: PushReceiverContext) -> Response:
    status = await ctx.receive(
        request.path_params.get("peer", ""), request.body,
        _single(request, TIMESTAMP_HEADER), _single(request, SIGNATURE_HEADER),
        _single(request, DELIVERY_ID_HEADER),
        _credential(request, "Authorization"), _credential(request, TOKEN_HEADER),
        request.client_certificate,
    )
    if status == 204:
        return Response(status_code=204, headers=_HEADERS)
    body = error_json(PushRefusal.model_validate(
        {"error": _ERRORS[status], "message": _MESSAGES[status]}))
    return Response(body, status, media_type=MEDIA_TYPE_APPLICATION_JSON, headers=_HEADERS)
