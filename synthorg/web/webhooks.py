"""The body of a signed push, buffered (bounded) before its operation runs.

Operations off the gateway see the scope, not the body stream; the push receiver needs the
exact bytes that were signed, so this wrapper reads them into the scope first."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from synthorg.generated.constants import PUSH_RECEIVE, PUSH_REFUSAL_TOO_LARGE
from synthorg.generated.models import PushRefusal
from synthorg.http.responses import JSON, error_json, send_bytes
from synthorg.web.router import compile_template

SCOPE_PUSH_BODY = "synthorg.push.body"
_WEBHOOK = compile_template(PUSH_RECEIVE.path)


class WebhookBodies:
    """Buffers the body of a push (bounded) into the scope; other requests pass through."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self._max = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not _WEBHOOK.fullmatch(
            scope["path"]
        ):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._max:
                refusal = error_json(PushRefusal(error=PUSH_REFUSAL_TOO_LARGE,
                                                 message="The push is too large"))
                await send_bytes(send, 413, refusal, [JSON])
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app({**scope, SCOPE_PUSH_BODY: b"".join(chunks)}, receive, send)
