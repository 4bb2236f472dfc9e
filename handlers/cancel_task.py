"""CancelTask: cancel the caller's own task unless it is already final."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.generated.models import V1CancelTaskParams, V1CancelTaskResult


async def handle(params: V1CancelTaskParams, ctx: RpcContext) -> V1CancelTaskResult:
    return await ctx.tasks.cancel(ctx.peer, params.id)
