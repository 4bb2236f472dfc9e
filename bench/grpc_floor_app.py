"""The gRPC floor: a bare grpc.aio server whose GetTask parses the request and answers one
canned Task; no gates, no store, no conversion. What grpcio's asyncio server allows on this
machine, for `bench.bindings`.

    .venv/bin/python -m bench.grpc_floor_app TASK_FILE [--uvloop]

TASK_FILE holds the serialized Task to answer. `--uvloop` serves on uvloop's event loop (the
node's: uvicorn picks it when it is installed) instead of asyncio's default. Listens on
127.0.0.1:0 and writes one `bench.server.started` JSON line (with the port) on stderr; serves
until SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import grpc

from bench.serve import STARTED
from synthorg.generated.grpc import a2a_pb2 as pb

SERVICE = "lf.a2a.v1.A2AService"


async def serve(task_file: Path) -> None:
    task = pb.Task.FromString(task_file.read_bytes())

    async def get_task(request: pb.GetTaskRequest, context: object) -> pb.Task:
        return task

    handler = grpc.unary_unary_rpc_method_handler(
        get_task, request_deserializer=pb.GetTaskRequest.FromString,
        response_serializer=pb.Task.SerializeToString)
    server = grpc.aio.server()
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE, {"GetTask": handler}),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(json.dumps({"event": STARTED, "port": port}), file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await server.stop(1)


if __name__ == "__main__":
    if "--uvloop" in sys.argv[2:]:
        import uvloop

        uvloop.run(serve(Path(sys.argv[1])))
    else:
        asyncio.run(serve(Path(sys.argv[1])))
