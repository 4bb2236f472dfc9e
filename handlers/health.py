"""The probes: GET /healthz (liveness) and GET /readyz (readiness), unauthenticated.

They say only `{"status": ...}`: a load balancer needs no more, and a stranger learns nothing
of the node's store or setup.
"""

from __future__ import annotations

from starlette.responses import Response

from handlers.context import HealthContext, HttpRequest
from synthorg.generated.constants import (
    HEALTH_STATUS_OK,
    HEALTH_STATUS_READY,
    HEALTH_STATUS_UNAVAILABLE,
    MEDIA_TYPE_APPLICATION_JSON,
)
from synthorg.http.responses import health_json

OK = health_json(HEALTH_STATUS_OK)
READY = health_json(HEALTH_STATUS_READY)
UNAVAILABLE = health_json(HEALTH_STATUS_UNAVAILABLE)
_HEADERS = {"Cache-Control": "no-store"}


async def live(request: HttpRequest, ctx: HealthContext) -> Response:
    return Response(OK, media_type=MEDIA_TYPE_APPLICATION_JSON, headers=_HEADERS)


async def ready(request: HttpRequest, ctx: HealthContext) -> Response:
    if await ctx.ready():
        return Response(READY, media_type=MEDIA_TYPE_APPLICATION_JSON, headers=_HEADERS)
    return not_ready()


def not_ready() -> Response:
    return Response(UNAVAILABLE, status_code=503, media_type=MEDIA_TYPE_APPLICATION_JSON,
                    headers={**_HEADERS, "Retry-After": "1"})
