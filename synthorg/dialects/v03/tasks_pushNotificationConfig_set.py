"""tasks/pushNotificationConfig/set: where the node pushes the caller's task as it changes."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.generated.models import (
    TasksPushNotificationConfigSetParams,
    TasksPushNotificationConfigSetResult,
)


async def handle(
    params: TasksPushNotificationConfigSetParams, ctx: RpcContext
) -> TasksPushNotificationConfigSetResult:
    return await ctx.push.set(ctx.peer, params.taskId, params.pushNotificationConfig)
