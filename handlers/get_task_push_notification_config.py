"""GetTaskPushNotificationConfig: one push config (id) of the caller's task (taskId)."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.dialects.objects import push_config_v1
from synthorg.generated.models import (
    V1GetTaskPushNotificationConfigParams,
    V1GetTaskPushNotificationConfigResult,
)


async def handle(
    params: V1GetTaskPushNotificationConfigParams, ctx: RpcContext
) -> V1GetTaskPushNotificationConfigResult:
    return push_config_v1(await ctx.push.get(ctx.peer, params.taskId, params.id))
