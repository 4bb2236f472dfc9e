"""The official `a2a-sdk` 0.3 server with a trivial echo agent, served by uvicorn.

`A2AStarletteApplication` with `DefaultRequestHandler` and `InMemoryTaskStore`; the agent
completes each task with one artifact echoing the message's text. No authentication: the
SDK has none of its own. `python -m bench.sdk_app`
"""

from __future__ import annotations

from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, Part, TextPart
from a2a.utils import new_task

from bench.serve import RPC_PATH, serve


class EchoAgent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        task = context.current_task
        if task is None:
            task = new_task(message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.add_artifact([Part(root=TextPart(text=context.get_user_input()))],
                                   name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def build(base_url: str) -> Any:
    card = AgentCard(
        name="a2a-sdk echo", description="a2a-sdk baseline for the bench",
        url=base_url + RPC_PATH, version="1.0", capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"], skills=[],
    )
    handler = DefaultRequestHandler(agent_executor=EchoAgent(), task_store=InMemoryTaskStore())
    return A2AStarletteApplication(agent_card=card, http_handler=handler).build(rpc_url=RPC_PATH)


if __name__ == "__main__":
    serve(build)
