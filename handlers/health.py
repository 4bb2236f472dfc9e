"""The probes: GET /healthz (liveness) and GET /readyz (readiness), unauthenticated.

They say only `{"status": ...}`: a load balancer needs no more, and a stranger learns nothing
of the node's store or setup.
"""

from __future__ import annotations

import json

from starlette.responses import Response

from handlers.context import HealthContext, HttpRequest

OK = json.dumps({"status": "ok"}).encode()
READY = json.dumps({"status": "ready"}).encode()
UNAVAILABLE = json.dumps({"status": "unavailable"}).encode()
_HEADERS = {"Cache-Control": "no-store"}


async def live(request: HttpRequest, ctx: HealthContext) -> Response:
    return Response(OK, media_type="application/json", headers=_HEADERS)


async def ready(request: HttpRequest, ctx: HealthContext) -> Response:
    if await ctx.ready():
        return Response(READY, media_type="application/json", headers=_HEADERS)
    return not_ready()


def not_ready() -> Response:
    return Response(UNAVAILABLE, status_code=503, media_type="application/json",
                    headers={**_HEADERS, "Retry-After": "1"})
