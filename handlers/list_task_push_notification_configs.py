"""ListTaskPushNotificationConfigs: the push configs of the caller's task, pageSize at a time
(default: all of them), in the order 0.3's tasks/pushNotificationConfig/list gives them."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.dialects.objects import push_config_v1
from synthorg.generated.models import (
    V1ListTaskPushNotificationConfigsParams,
    V1ListTaskPushNotificationConfigsResult,
)


async def handle(
    params: V1ListTaskPushNotificationConfigsParams, ctx: RpcContext
) -> V1ListTaskPushNotificationConfigsResult:
    configs = await ctx.push.list(ctx.peer, params.taskId)
    # The token is the offset of the next page: a task holds few configs (at most 16).
    start = int(params.pageToken or 0)
    end = start + params.pageSize if params.pageSize is not None else len(configs)
    return V1ListTaskPushNotificationConfigsResult(
        configs=[push_config_v1(config) for config in configs[start:end]],
        nextPageToken=str(end) if end < len(configs) else "",
    )
