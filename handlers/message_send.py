"""message/send: start a task on one of this node's agents, or continue one."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.generated.models import MessageSendParams, MessageSendResult, Task


async def handle(params: MessageSendParams, ctx: RpcContext) -> MessageSendResult:
    push = params.configuration.pushNotificationConfig if params.configuration else None
    if push is not None:  # refused before any task is made for it
        await ctx.push.check(ctx.peer, push)
    answer = await ctx.tasks.send(ctx.peer, params, ctx.agent_id)
    # Registering pushes the task's current state if it moved on; a direct reply (a
    # Message) has no task to push about.
    if push is not None and isinstance(answer, Task):
        await ctx.push.set(ctx.peer, answer.id, push)
    return answer
