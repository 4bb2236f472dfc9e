"""DeleteTaskPushNotificationConfig: stop pushing to one config (id) of the caller's task."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.generated.models import (
    V1DeleteTaskPushNotificationConfigParams,
    V1DeleteTaskPushNotificationConfigResult,
)


async def handle(
    params: V1DeleteTaskPushNotificationConfigParams, ctx: RpcContext
) -> V1DeleteTaskPushNotificationConfigResult:
    await ctx.push.delete(ctx.peer, params.taskId, params.id)
    return None
