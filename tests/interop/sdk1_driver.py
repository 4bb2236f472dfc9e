"""Drives the official `a2a-sdk` 1.x (its own virtualenv, `make sdk1-venv`) for the interop
tests in `test_sdk1.py`, which run this file as a subprocess with that venv's python: the
1.x SDK shares the `a2a` import name with the 0.3 SDK of the dev venv.

    python sdk1_driver.py client URL PEER KEY [BINDING]
                                                the 1.x client against a node, restricted to
                                                BINDING (JSONRPC by default, HTTP+JSON or
                                                GRPC: the card's interface of that binding);
                                                prints JSON
    python sdk1_driver.py server PEER KEY       a 1.x server on 127.0.0.1 (prints "PORT n",
                                                serves until stdin closes)
    python sdk1_driver.py server-rest PEER KEY  the same, serving HTTP+JSON only (the SDK's
                                                own REST routes, under /a2a/rest; its card
                                                lists that interface alone, and streaming)
    python sdk1_driver.py server-grpc PEER KEY  the same, serving gRPC only (the SDK's own
                                                GrpcHandler on a port of its own; the card,
                                                still served over HTTP, lists that interface
                                                alone, as `127.0.0.1:PORT`; prints "PORT n
                                                GRPC m")

Our peer headers go through the SDK's own hooks: a client call interceptor (client) and a
small ASGI middleware answering 401 (server; over gRPC an interceptor answering
UNAUTHENTICATED). Agents, by `metadata.agentId`: `echo`
completes with an artifact echoing the text; `parker` waits in input-required until
canceled; `chatty` answers with a Message.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import uuid
from typing import Any

import httpx
from google.protobuf.json_format import MessageToDict, ParseDict

RPC_PATH = "/api/v1/a2a/"
REST_PATH = "/a2a/rest"  # not our node's path: the client must take it from the card


def _dict(message: Any) -> dict[str, Any]:
    return MessageToDict(message)


# -- the client -------------------------------------------------------------------------------


async def client_run(url: str, peer: str, key: str, binding: str = "JSONRPC") -> dict[str, Any]:
    import grpc as grpc_lib
    from a2a.client import ClientCallContext, ClientConfig, ClientFactory
    from a2a.client.interceptors import AfterArgs, BeforeArgs, ClientCallInterceptor
    from a2a.types.a2a_pb2 import (
        CancelTaskRequest,
        GetExtendedAgentCardRequest,
        GetTaskRequest,
        ListTasksRequest,
        Message,
        SendMessageRequest,
        SubscribeToTaskRequest,
    )

    class PeerHeaders(ClientCallInterceptor):
        async def before(self, args: BeforeArgs) -> None:
            if args.context is None:
                args.context = ClientCallContext()
            if args.context.service_parameters is None:
                args.context.service_parameters = {}
            args.context.service_parameters["X-A2A-Peer-Name"] = peer
            args.context.service_parameters["X-API-Key"] = key

        async def after(self, args: AfterArgs) -> None:
            return None

    out: dict[str, Any] = {}
    async with httpx.AsyncClient(timeout=30) as http:

        def config(streaming: bool) -> ClientConfig:
            if binding != "GRPC":
                return ClientConfig(streaming=streaming, httpx_client=http,
                                    supported_protocol_bindings=[binding])
            return ClientConfig(  # the card's GRPC interface, its url a gRPC target
                streaming=streaming, httpx_client=http, supported_protocol_bindings=["GRPC"],
                grpc_channel_factory=grpc_lib.aio.insecure_channel,
            )

        factory = ClientFactory(config(False))
        client = await factory.create_from_url(url, interceptors=[PeerHeaders()])

        async def send(text: str, agent: str) -> dict[str, Any]:
            message = ParseDict(
                {
                    "messageId": str(uuid.uuid4()),
                    "role": "ROLE_USER",
                    "parts": [{"text": text}],
                    "metadata": {"agentId": agent},
                },
                Message(),
            )
            answers = [
                _dict(event) async for event in client.send_message(
                    SendMessageRequest(message=message)
                )
            ]
            return answers[-1]

        out["echo"] = await send("hello from sdk 1.x", "echo")
        parked = (await send("park me", "parker"))["task"]
        streaming = await ClientFactory(config(True)).create_from_url(
            url, interceptors=[PeerHeaders()]
        )
        message = ParseDict(
            {"messageId": str(uuid.uuid4()), "role": "ROLE_USER",
             "parts": [{"text": "stream me"}], "metadata": {"agentId": "echo"}},
            Message(),
        )
        out["streamed"] = [
            _dict(event) async for event in streaming.send_message(
                SendMessageRequest(message=message)
            )
        ]
        out["subscribed"] = [
            _dict(event) async for event in streaming.subscribe(
                SubscribeToTaskRequest(id=parked["id"])
            )
        ]
        out["parked"] = parked
        out["got"] = _dict(await client.get_task(GetTaskRequest(id=parked["id"])))
        out["listed"] = _dict(await client.list_tasks(ListTasksRequest(page_size=10)))
        out["canceled"] = _dict(await client.cancel_task(CancelTaskRequest(id=parked["id"])))
        try:
            await client.get_task(GetTaskRequest(id="no-such-task"))
            out["missing"] = "found"
        except Exception as exc:  # the SDK's typed error for -32001
            out["missing"] = type(exc).__name__
        try:
            extended = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
            out["extended"] = _dict(extended)
        except Exception as exc:
            out["extended"] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        await client.close()
    return out


# -- the server -------------------------------------------------------------------------------


def build_server(peer: str, key: str, port: int, binding: str = "JSONRPC",
                 grpc_port: int | None = None) -> Any:
    """The app (its card, and the routes of `binding`) and the request handler."""
    rest = binding == "HTTP+JSON"
    from a2a.helpers.proto_helpers import new_task_from_user_message
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import (
        create_agent_card_routes,
        create_jsonrpc_routes,
        create_rest_routes,
    )
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types.a2a_pb2 import AgentCard, Message, Part
    from starlette.applications import Starlette

    class Agents(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            message = context.message
            assert message is not None
            metadata = MessageToDict(message).get("metadata", {})
            agent = metadata.get("agentId", "echo")
            if agent == "chatty":
                reply = ParseDict(
                    {"messageId": str(uuid.uuid4()), "role": "ROLE_AGENT",
                     "parts": [{"text": "just a message"}]},
                    Message(),
                )
                await event_queue.enqueue_event(reply)
                return
            task = context.current_task
            if task is None:
                task = new_task_from_user_message(message)
                await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            if agent == "parker":
                await updater.requires_input(
                    updater.new_agent_message([Part(text="waiting for input")])
                )
                return
            await updater.start_work()
            await updater.add_artifact([Part(text=context.get_user_input())], name="echo")
            await updater.complete()

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            assert context.task_id is not None and context.context_id is not None
            await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()

    path = REST_PATH if rest else RPC_PATH
    url = f"http://127.0.0.1:{port}{path}"
    if grpc_port is not None:
        url = f"127.0.0.1:{grpc_port}"
    card = ParseDict(
        {
            "name": "sdk1-peer",
            "description": "a2a-sdk 1.x server for interop tests",
            "version": "1.0.0",
            "supportedInterfaces": [
                {"url": url, "protocolBinding": binding, "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": binding != "JSONRPC"},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [
                {"id": "echo", "name": "Echo", "description": "Echoes text", "tags": ["echo"]}
            ],
        },
        AgentCard(),
    )
    handler = DefaultRequestHandler(
        agent_executor=Agents(), task_store=InMemoryTaskStore(), agent_card=card
    )
    served = (create_rest_routes(handler, path_prefix=REST_PATH) if rest
              else [] if grpc_port is not None else create_jsonrpc_routes(handler, RPC_PATH))
    app = Starlette(routes=[*create_agent_card_routes(card), *served])

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(path):
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            if headers.get("x-a2a-peer-name") != peer or headers.get("x-api-key") != key:
                error = ({"code": 401, "status": "UNAUTHENTICATED"} if rest
                         else {"code": -32003})  # google.rpc.Status, or a JSON-RPC error
                refusal: dict[str, Any] = {"error": {**error, "message": "Authentication required"}}
                if not rest:
                    refusal.update(jsonrpc="2.0", id=None)
                body = json.dumps(refusal).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": body})
                return
            scope.setdefault("state", {})["a2a_version"] = headers.get("a2a-version")
        await app(scope, receive, send)

    return guarded, handler


def server_run(peer: str, key: str, binding: str = "JSONRPC") -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    if binding == "GRPC":
        asyncio.run(_serve_grpc(peer, key, sock))
        return
    app, _ = build_server(peer, key, port, binding)
    config = uvicorn.Config(app, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    print(f"PORT {port}", flush=True)
    sys.stdin.read()  # until the test closes our stdin
    server.should_exit = True
    thread.join(10)


async def _serve_grpc(peer: str, key: str, sock: socket.socket) -> None:
    """The card over HTTP on `sock`, the A2AService on a gRPC port of its own, in one loop."""
    import grpc
    import uvicorn
    from a2a.server.request_handlers import GrpcHandler
    from a2a.types import a2a_pb2_grpc

    class Guard(grpc.aio.ServerInterceptor):  # type: ignore[misc]
        async def intercept_service(self, continuation: Any, details: Any) -> Any:
            handler = await continuation(details)
            metadata = dict(details.invocation_metadata or ())
            if metadata.get("x-a2a-peer-name") == peer and metadata.get("x-api-key") == key:
                return handler

            async def deny(request: Any, context: Any) -> Any:
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, "Authentication required")

            async def deny_stream(request: Any, context: Any) -> Any:
                await deny(request, context)
                yield  # pragma: no cover - abort raises

            options = {"request_deserializer": handler.request_deserializer,
                       "response_serializer": handler.response_serializer}
            if handler.response_streaming:
                return grpc.unary_stream_rpc_method_handler(deny_stream, **options)
            return grpc.unary_unary_rpc_method_handler(deny, **options)

    server = grpc.aio.server(interceptors=[Guard()])
    grpc_port = server.add_insecure_port("127.0.0.1:0")
    app, handler = build_server(peer, key, sock.getsockname()[1], "GRPC", grpc_port)
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
    await server.start()
    http = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    serving = asyncio.ensure_future(http.serve(sockets=[sock]))
    print(f"PORT {sock.getsockname()[1]} GRPC {grpc_port}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    http.should_exit = True
    await serving
    await server.stop(1)


def main(argv: list[str]) -> int:
    if argv[:1] == ["client"] and len(argv) in (4, 5):
        print(json.dumps(asyncio.run(client_run(*argv[1:]))))
        return 0
    bindings = {"server": "JSONRPC", "server-rest": "HTTP+JSON", "server-grpc": "GRPC"}
    if argv[:1] and argv[0] in bindings and len(argv) == 3:
        server_run(*argv[1:], binding=bindings[argv[0]])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
