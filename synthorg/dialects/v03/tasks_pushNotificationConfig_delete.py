"""tasks/pushNotificationConfig/delete: stop pushing to one config of the caller's task."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.generated.models import (
    TasksPushNotificationConfigDeleteParams,
    TasksPushNotificationConfigDeleteResult,
)


async def handle(
    params: TasksPushNotificationConfigDeleteParams, ctx: RpcContext
) -> TasksPushNotificationConfigDeleteResult:
    await ctx.push.delete(ctx.peer, params.id, params.pushNotificationConfigId)
    return None
