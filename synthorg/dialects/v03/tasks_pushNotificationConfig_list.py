"""tasks/pushNotificationConfig/list: every push config of the caller's task."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.generated.models import (
    TasksPushNotificationConfigListParams,
    TasksPushNotificationConfigListResult,
)


async def handle(
    params: TasksPushNotificationConfigListParams, ctx: RpcContext
) -> TasksPushNotificationConfigListResult:
    return await ctx.push.list(ctx.peer, params.id)
