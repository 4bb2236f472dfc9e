# mypy: ignore-errors
# (typed against the SDK 1.x of .venv-sdk1; this project's venv has the 0.3 SDK)
"""The official a2a-sdk 1.x gRPC server (`GrpcHandler` over `DefaultRequestHandler` with an
`InMemoryTaskStore`, its defaults) holding one task, for `bench.bindings`.

Run with the SDK 1.x virtualenv (`make sdk1-venv`), not this project's:

    .venv-sdk1/bin/python bench/sdk1_grpc_app.py TASK_FILE

TASK_FILE holds one serialized `lf.a2a.v1.Task` (the node's answer to GetTask, so both servers
answer the same bytes); it is stored before the server listens. Listens on 127.0.0.1:0 and
writes one `bench.server.started` JSON line (with the port) on stderr, as `bench.serve` does;
serves until SIGTERM or SIGINT. No authentication: the SDK has none of its own.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import grpc
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import a2a_pb2, a2a_pb2_grpc

STARTED = "bench.server.started"  # bench.serve's event; this file runs outside the package


class Idle(AgentExecutor):
    """No message reaches it: the bench only reads the stored task."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


async def serve(task_file: Path) -> None:
    task = a2a_pb2.Task.FromString(task_file.read_bytes())
    store = InMemoryTaskStore()
    await store.save(task, ServerCallContext())  # the unauthenticated caller's scope
    card = a2a_pb2.AgentCard(name="a2a-sdk 1.x", description="a2a-sdk 1.x gRPC baseline",
                             version="1.0.0")
    handler = DefaultRequestHandler(agent_executor=Idle(), task_store=store, agent_card=card)
    server = grpc.aio.server()
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(json.dumps({"event": STARTED, "port": port, "task": task.id}), file=sys.stderr,
          flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await server.stop(1)


if __name__ == "__main__":
    asyncio.run(serve(Path(sys.argv[1])))
