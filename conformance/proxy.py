"""A small forwarding proxy that adds a peer's headers to every request, so a client that
knows nothing of SynthOrg's gates (an A2A conformance kit) can call a node as an admitted peer.

    python -m conformance.proxy --listen 8100 --target http://127.0.0.1:8000 \\
        --peer tck --key-file secret.txt [--card-version 1.0]

Responses, event streams included, are passed back as they arrive. `--card-version` is the
A2A-Version added to a card fetch that carries none: a 1.0 client must send the header with
each request, and the 1.0 kit fetches the card without it, which would get the combined
0.3 + 1.0 document instead of the 1.0 one it validates.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import uvicorn
from starlette.types import Receive, Scope, Send

_HOP = frozenset({b"host", b"connection", b"content-length", b"transfer-encoding",
                  b"keep-alive"})


class HeaderProxy:
    def __init__(
        self, target: str, headers: dict[str, str], card_version: str | None = None
    ) -> None:
        self._target = target.rstrip("/")
        self._headers = headers
        self._card_version = card_version
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(60.0, read=None))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k.decode("latin-1"), v.decode("latin-1"))
                   for k, v in scope["headers"] if k.lower() not in _HOP]
        headers += list(self._headers.items())
        path = scope["raw_path"].decode("latin-1")
        if (
            self._card_version is not None
            and path.startswith("/.well-known/")
            and not any(name.lower() == "a2a-version" for name, _ in headers)
        ):
            headers.append(("A2A-Version", self._card_version))
        url = self._target + path
        if scope.get("query_string"):
            url += "?" + scope["query_string"].decode("latin-1")
        request = self._client.build_request(scope["method"], url, headers=headers, content=body)
        response = await self._client.send(request, stream=True)
        try:
            await send({
                "type": "http.response.start",
                "status": response.status_code,
                "headers": [(k, v) for k, v in response.headers.raw if k.lower() not in _HOP],
            })
            async for chunk in _chunks(response):
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()


async def _chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    async for chunk in response.aiter_raw():
        yield chunk


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m conformance.proxy")
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--peer", required=True)
    parser.add_argument("--key-file", type=Path, required=True)
    parser.add_argument("--card-version")
    args = parser.parse_args()
    key = args.key_file.read_text().strip()
    app = HeaderProxy(args.target, {"X-A2A-Peer-Name": args.peer, "X-API-Key": key},
                      args.card_version)
    uvicorn.run(app, host="127.0.0.1", port=args.listen, log_level="warning")


if __name__ == "__main__":
    main()
