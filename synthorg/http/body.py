"""Reading a request body under a ceiling, for the pure-ASGI gates.

The declared Content-Length is checked by each gate first; this enforces the same ceiling
while streaming, so a lying or absent (chunked) length buys nothing.
"""

from __future__ import annotations

from starlette.types import Message, Receive


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


def replay_body(body: bytes, receive: Receive) -> Receive:
    """Hand a buffered body to the app once, then defer to the real channel so a later
    disconnect still reaches it."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
