"""Writing a complete response from a pure-ASGI app."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.types import Send

from synthorg.generated.constants import ADMIN_ERROR_NOT_FOUND, MEDIA_TYPE_APPLICATION_JSON
from synthorg.generated.models import AdminError, CardError, HealthStatus, PushRefusal

JSON = (b"content-type", MEDIA_TYPE_APPLICATION_JSON.encode())
CLOSE = (b"connection", b"close")


async def send_bytes(
    send: Send,
    status: int,
    body: bytes,
    headers: Sequence[tuple[bytes, bytes]] = (JSON,),
) -> None:
    """One response, body included, with its Content-Length."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode("ascii"))],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


ErrorDocument = AdminError | CardError | PushRefusal


def error_json(document: ErrorDocument) -> bytes:
    """A served error body: the spec's error document, serialised once (unset members left
    out, as the schema has them optional rather than nullable)."""
    return document.model_dump_json(exclude_none=True).encode()


def admin_error(error: str, message: str, key: object = None, allowed: object = None) -> bytes:
    """An AdminError body (`error` one of the spec's codes: ADMIN_ERROR_*); `key` and
    `allowed` when a refusal names them."""
    return error_json(AdminError.model_validate({
        "error": error, "message": message,
        **({} if key is None else {"key": str(key)}),
        **({} if allowed is None else {"allowed": str(allowed)}),
    }))


def health_json(status: str) -> bytes:
    """A probe's answer (HealthStatus; `status` one of HEALTH_STATUS_*)."""
    return HealthStatus.model_validate({"status": status}).model_dump_json().encode()


NOT_FOUND = admin_error(ADMIN_ERROR_NOT_FOUND, "No such path")


async def send_not_found(send: Send) -> None:
    """The answer for a path this node does not serve (or a route that is switched off)."""
    await send_bytes(send, 404, NOT_FOUND)
