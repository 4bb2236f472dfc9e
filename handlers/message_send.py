"""message/send: start a task on one of this node's agents, or continue one."""

from __future__ import annotations

from typing import Any

from synthorg.gateway.context import RpcContext
from synthorg.generated.models import MessageSendParams


async def handle(params: MessageSendParams, ctx: RpcContext) -> dict[str, Any]:
    task: dict[str, Any] = await ctx.node.tasks.send(ctx.peer, params, ctx.agent_id)
    return task
