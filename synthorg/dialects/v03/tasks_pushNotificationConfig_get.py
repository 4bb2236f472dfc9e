"""tasks/pushNotificationConfig/get: one push config of the caller's task."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.generated.models import (
    TasksPushNotificationConfigGetParams,
    TasksPushNotificationConfigGetResult,
)


async def handle(
    params: TasksPushNotificationConfigGetParams, ctx: RpcContext
) -> TasksPushNotificationConfigGetResult:
    return await ctx.push.get(ctx.peer, params.id, params.pushNotificationConfigId)
