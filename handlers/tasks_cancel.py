"""tasks/cancel: cancel the caller's own task unless it is already final."""

from __future__ import annotations

from typing import Any

from synthorg.gateway.context import RpcContext
from synthorg.generated.models import TasksCancelParams


async def handle(params: TasksCancelParams, ctx: RpcContext) -> dict[str, Any]:
    task: dict[str, Any] = await ctx.node.tasks.cancel(ctx.peer, params.id)
    return task
