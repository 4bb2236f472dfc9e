"""The floor: a bare Starlette JSON-RPC echo on one route, served by uvicorn.

It parses the JSON body and answers a JSON-RPC result carrying the request's params; nothing
else (no gates, no validation, no store). `python -m bench.floor_app`
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from bench.serve import RPC_PATH, serve


async def rpc(request: Request) -> JSONResponse:
    envelope = await request.json()
    return JSONResponse(
        {"jsonrpc": "2.0", "id": envelope.get("id"), "result": {"echo": envelope.get("params")}}
    )


def build(_base_url: str) -> Starlette:
    return Starlette(routes=[Route(RPC_PATH, rpc, methods=["POST"])])


if __name__ == "__main__":
    serve(build)
