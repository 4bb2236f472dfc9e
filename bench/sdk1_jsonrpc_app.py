# mypy: ignore-errors
# (typed against the SDK 1.x of .venv-sdk1; this project's venv has the 0.3 SDK)
"""The official a2a-sdk 1.x JSON-RPC server with a trivial echo agent, served by uvicorn.

The SDK's own Starlette routes (`create_jsonrpc_routes` and `create_agent_card_routes`) over
`DefaultRequestHandler` with an `InMemoryTaskStore`, its defaults; the agent completes each
task with one artifact echoing the message's text, as `bench.sdk_app` (the 0.3 SDK) does. The
bench creates a task with `SendMessage` and reads it with `GetTask` (A2A 1.0, `A2A-Version:
1.0`). No authentication: the SDK has none of its own.

Run with the SDK 1.x virtualenv (`make sdk1-venv`), not this project's, from the repository
root (it shares `bench.serve` with the other baselines: uvicorn with uvloop and httptools):

    .venv-sdk1/bin/python -m bench.sdk1_jsonrpc_app
"""

from __future__ import annotations

from typing import Any

from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part
from starlette.applications import Starlette

from bench.serve import RPC_PATH, serve


class EchoAgent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.add_artifact([Part(text=context.get_user_input())], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def build(base_url: str) -> Any:
    card = AgentCard(
        name="a2a-sdk 1.x echo", description="a2a-sdk 1.x baseline for the bench",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=base_url + RPC_PATH, protocol_binding="JSONRPC",
                                             protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echoes text", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=EchoAgent(), task_store=InMemoryTaskStore(),
                                    agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card),
                             *create_jsonrpc_routes(handler, RPC_PATH)])


if __name__ == "__main__":
    serve(build)
