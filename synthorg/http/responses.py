"""Writing a complete response from a pure-ASGI app."""

from __future__ import annotations

import json
from collections.abc import Sequence

from starlette.types import Send

from synthorg.generated.constants import ADMIN_ERROR_NOT_FOUND

JSON = (b"content-type", b"application/json")
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


def error_document(error: str, message: str) -> bytes:
    return json.dumps({"error": error, "message": message}).encode()


NOT_FOUND = error_document(ADMIN_ERROR_NOT_FOUND, "No such path")


async def send_not_found(send: Send) -> None:
    """The answer for a path this node does not serve (or a route that is switched off)."""
    await send_bytes(send, 404, NOT_FOUND)
