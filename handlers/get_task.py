"""GetTask: the caller's own task, with at most historyLength recent messages."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.generated.models import V1GetTaskParams, V1GetTaskResult


async def handle(params: V1GetTaskParams, ctx: RpcContext) -> V1GetTaskResult:
    return await ctx.tasks.get(ctx.peer, params.id, params.historyLength)
