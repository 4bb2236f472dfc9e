"""tasks/get: the caller's own task, with at most historyLength recent messages."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.dialects.objects import task_v03
from synthorg.generated.models import TasksGetParams, TasksGetResult


async def handle(params: TasksGetParams, ctx: RpcContext) -> TasksGetResult:
    return task_v03(await ctx.tasks.get(ctx.peer, params.id, params.historyLength))
