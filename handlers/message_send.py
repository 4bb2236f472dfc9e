"""message/send: start a task on one of this node's agents, or continue one."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.generated.models import MessageSendParams, MessageSendResult


async def handle(params: MessageSendParams, ctx: RpcContext) -> MessageSendResult:
    push = params.configuration.pushNotificationConfig if params.configuration else None
    if push is not None:  # refused before any task is made for it
        await ctx.push.check(ctx.peer, push)
    task = await ctx.tasks.send(ctx.peer, params, ctx.agent_id)
    if push is not None:  # registering pushes the task's current state if it moved on
        await ctx.push.set(ctx.peer, task.id, push)
    return task
