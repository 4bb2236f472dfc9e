"""A peer built on the official `a2a-sdk` 0.3.x server, for interop tests of our client.

`A2AStarletteApplication` with the SDK's `DefaultRequestHandler` and in-memory task store,
served by uvicorn in a thread on 127.0.0.1 (a socket bound and listening before the thread
starts, so callers may connect at once), behind a small ASGI middleware that answers 401
with a JSON-RPC -32003 error unless `X-A2A-Peer-Name` and `X-API-Key` are right.

Agents, chosen by the message's `metadata.agentId`: `echo` completes with an artifact
echoing the text; `parker` waits in input-required until canceled; `chatty` answers with a
Message instead of a Task (allowed by A2A for message/send).
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, Part, TextPart
from a2a.utils import new_agent_text_message, new_task

RPC_PATH = "/api/v1/a2a/"
Scope = dict[str, Any]


class SdkAgents(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        agent = (message.metadata or {}).get("agentId", "echo")
        if agent == "chatty":
            await event_queue.enqueue_event(new_agent_text_message("just a message"))
            return
        task = context.current_task
        if task is None:
            task = new_task(message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if agent == "parker":
            await updater.requires_input(updater.new_agent_message(
                [Part(root=TextPart(text="waiting for input"))]
            ), final=True)
            return
        await updater.start_work()
        echoed = Part(root=TextPart(text=context.get_user_input()))
        await updater.add_artifact([echoed], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class PeerHeaderGate:
    """Pure ASGI: the RPC path needs the right peer name and API key, else 401 -32003."""

    def __init__(self, app: Any, peer: str, key: str) -> None:
        self.app = app
        self._expected = {b"x-a2a-peer-name": peer.encode(), b"x-api-key": key.encode()}
        self.seen: list[dict[str, str]] = []

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(RPC_PATH):
            headers = dict(scope["headers"])
            self.seen.append({k.decode(): v.decode() for k, v in headers.items()})
            if any(headers.get(name) != value for name, value in self._expected.items()):
                await self._refuse(send)
                return
        await self.app(scope, receive, send)

    @staticmethod
    async def _refuse(send: Any) -> None:
        error = {"code": -32003, "message": "Peer not authenticated"}
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
        await send({
            "type": "http.response.start",
            "status": 401,
            "headers": [(b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode())],
        })
        await send({"type": "http.response.body", "body": body})


class SdkPeer:
    def __init__(self, peer: str, key: str) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        card = AgentCard(
            name="sdk peer", description="a2a-sdk interop peer", url=self.url + RPC_PATH,
            version="1.0", capabilities=AgentCapabilities(streaming=False),
            default_input_modes=["text/plain"], default_output_modes=["text/plain"], skills=[],
        )
        handler = DefaultRequestHandler(agent_executor=SdkAgents(), task_store=InMemoryTaskStore())
        app = A2AStarletteApplication(agent_card=card, http_handler=handler).build(rpc_url=RPC_PATH)
        self.gate = PeerHeaderGate(app, peer, key)
        config = uvicorn.Config(self.gate, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def __enter__(self) -> SdkPeer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()
