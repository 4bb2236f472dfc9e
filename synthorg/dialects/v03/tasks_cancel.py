"""tasks/cancel: cancel the caller's own task unless it is already final."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.dialects.objects import task_v03
from synthorg.generated.models import TasksCancelParams, TasksCancelResult


async def handle(params: TasksCancelParams, ctx: RpcContext) -> TasksCancelResult:
    return task_v03(await ctx.tasks.cancel(ctx.peer, params.id))
