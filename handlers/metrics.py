"""GET /metrics: the node's metrics in the Prometheus text format (0.0.4).

The endpoint admits the caller first (the admin token, unless metrics are public)."""

from __future__ import annotations

from starlette.responses import Response

from handlers.context import HttpRequest, MetricsContext
from synthorg.generated.constants import ADMIN_ERROR_NOT_FOUND, MEDIA_TYPE_APPLICATION_JSON
from synthorg.http.responses import admin_error

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_HEADERS = {"Cache-Control": "no-store"}
OFF = admin_error(ADMIN_ERROR_NOT_FOUND, "Metrics are turned off")


async def scrape(request: HttpRequest, ctx: MetricsContext) -> Response:
    text = await ctx.render()
    if text is None:
        return Response(OFF, status_code=404, media_type=MEDIA_TYPE_APPLICATION_JSON,
                        headers=_HEADERS)
    return Response(text, headers={**_HEADERS, "Content-Type": CONTENT_TYPE})
