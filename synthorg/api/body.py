"""Reading a request body under a ceiling, for the pure-ASGI gates.

The declared Content-Length is checked by each gate first; this enforces the same ceiling
while streaming, so a lying or absent (chunked) length buys nothing.
"""

from __future__ import annotations

from starlette.types import Receive


class BodyTooLarge(Exception):
    pass


class ClientDisconnected(Exception):
    pass


async def read_body(receive: Receive, limit: int) -> bytes:
    """Buffer the body, giving up as soon as it passes `limit`: at most `limit` bytes plus
    the chunk in hand are ever held."""
    chunks: list[bytes] = []
    total = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnected
        if message["type"] != "http.request":
            continue
        chunk: bytes = message.get("body", b"")
        total += len(chunk)
        if total > limit:
            raise BodyTooLarge
        if chunk:
            chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
