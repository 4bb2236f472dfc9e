"""tasks/get: the caller's own task, with at most historyLength recent messages."""

from __future__ import annotations

from typing import Any

from synthorg.gateway.context import RpcContext
from synthorg.generated.models import TasksGetParams


async def handle(params: TasksGetParams, ctx: RpcContext) -> dict[str, Any]:
    task: dict[str, Any] = await ctx.node.tasks.get(ctx.peer, params.id, params.historyLength)
    return task
