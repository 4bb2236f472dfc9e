"""Per-request cost of the inbound pipeline, as ratios against baselines in the same run.

Calls go straight into the ASGI apps (no sockets), so what is measured is this code, not the
network: a plain Starlette route answering the same JSON is the floor, and the pydantic
validation of one params object shows what the contract itself costs.

    .venv/bin/python -m bench.pipeline [--requests N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from synthorg.gateway.dispatch import PARAMS_ADAPTER
from synthorg.node import Node

PEER, SECRET = "bench-peer", "bench-link-secret-0123456789"
HEADERS = [
    (b"content-type", b"application/json"),
    (b"x-a2a-peer-name", PEER.encode()),
    (b"x-api-key", SECRET.encode()),
]


def envelope(method: str, params: dict[str, Any], request_id: int) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    ).encode()


async def call(app: Any, path: str, body: bytes) -> int:
    """One request through an ASGI app; returns the status."""
    sent = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [*HEADERS, (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    await app(scope, receive, send)
    return status


async def timed(label: str, n: int, one: Callable[[int], Awaitable[int]]) -> float:
    for i in range(min(200, n)):  # warm up
        assert await one(i) == 200, label
    start = time.perf_counter()
    for i in range(n):
        await one(i)
    return (time.perf_counter() - start) / n * 1e6


def build_node(data_dir: Path) -> Node:
    (data_dir / "config.yaml").write_text(f"a2a:\n  enabled: true\n  allowed_peers: [{PEER}]\n")
    node = Node.build(data_dir)
    node.catalog.put(PEER, "http://127.0.0.1:9", "api_key", SECRET)
    return node


async def run(n: int) -> list[tuple[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        node = build_node(Path(tmp))
        app = node.app()
        await node.recover()

        async def plain(_: Any) -> Response:
            return Response(b'{"jsonrpc":"2.0","id":1,"result":{}}', media_type="application/json")

        baseline = Starlette(routes=[Route("/api/v1/a2a/", plain, methods=["POST"])])
        get_body = envelope("tasks/get", {"id": "no-such-task"}, 1)
        params = {"method": "tasks/get", "id": "no-such-task"}

        async def validate_only(_: int) -> int:
            PARAMS_ADAPTER.validate_python(params)
            return 200

        def send_body(i: int) -> bytes:
            message = {
                "kind": "message",
                "messageId": f"m-{i}",
                "role": "user",
                "parts": [{"kind": "text", "text": "hello"}],
            }
            return envelope("message/send", {"message": message}, i)

        rows = [
            ("params validation only (pydantic)", await timed("v", n, validate_only)),
            (
                "plain Starlette route (floor)",
                await timed("s", n, lambda i: call(baseline, "/api/v1/a2a/", get_body)),
            ),
            (
                "tasks/get, unknown id (full pipeline)",
                await timed("g", n, lambda i: call(app, "/api/v1/a2a/", get_body)),
            ),
            (
                "message/send to echo (full pipeline, 2 writes)",
                await timed("m", n, lambda i: call(app, "/api/v1/a2a/", send_body(i + 10**6))),
            ),
        ]
        node.close()
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    rows = asyncio.run(run(args.requests))
    floor = rows[1][1]
    print(f"{'case':<48} {'us/request':>11} {'x floor':>8}")
    for label, micros in rows:
        print(f"{label:<48} {micros:>11.1f} {micros / floor:>8.2f}")


if __name__ == "__main__":
    main()
