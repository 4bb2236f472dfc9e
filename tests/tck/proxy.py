"""A small reverse proxy for conformance kits: it forwards every request to a node and adds
our peer headers (`X-A2A-Peer-Name`, `X-API-Key`), which a kit cannot send itself. The
node's card url points at the proxy (`a2a.public_url`), so the kit calls through it.

`card_version` is the A2A-Version the proxy adds to a card fetch that carries none: a 1.0
client must send the header with each request, and the 1.0 kit fetches the card without it,
which would get the combined 0.3 + 1.0 document instead of the 1.0 one it validates."""

from __future__ import annotations

import socket
import threading
from typing import Any

import httpx
import uvicorn

HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "transfer-encoding", "te", "upgrade", "content-length", "host",
})
Scope = dict[str, Any]


class HeaderProxy:
    def __init__(self, peer: str, key: str, card_version: str | None = None) -> None:
        self.peer, self.key = peer, key
        self.card_version = card_version
        self.target = ""
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = int(self.sock.getsockname()[1])
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in scope["headers"]
            if k.decode("latin-1").lower() not in HOP_BY_HOP
        ]
        headers += [("X-A2A-Peer-Name", self.peer), ("X-API-Key", self.key)]
        path = scope["raw_path"].decode("latin-1")
        if (
            self.card_version is not None
            and path.startswith("/.well-known/")
            and not any(name.lower() == "a2a-version" for name, _ in headers)
        ):
            headers.append(("A2A-Version", self.card_version))
        url = self.target + path
        if scope.get("query_string"):
            url += "?" + scope["query_string"].decode("latin-1")
        async with httpx.AsyncClient(timeout=60) as client:
            answer = await client.request(scope["method"], url, content=body, headers=headers)
        out = [
            (k.encode("latin-1"), v.encode("latin-1"))
            for k, v in answer.headers.items()
            if k.lower() not in HOP_BY_HOP and k.lower() != "content-encoding"
        ]
        out.append((b"content-length", str(len(answer.content)).encode()))
        await send({"type": "http.response.start", "status": answer.status_code, "headers": out})
        await send({"type": "http.response.body", "body": answer.content})

    def start(self, target: str) -> None:
        self.target = target.rstrip("/")
        config = uvicorn.Config(self, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
