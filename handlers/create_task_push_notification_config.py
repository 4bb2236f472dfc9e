"""CreateTaskPushNotificationConfig: where the node pushes the caller's task as it changes
(0.3's tasks/pushNotificationConfig/set, its refusals included)."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.dialects.objects import push_config_v03_json, push_config_v1
from synthorg.generated.constants import TASKS_PUSH_NOTIFICATION_CONFIG_SET
from synthorg.generated.models import (
    TasksPushNotificationConfigSetParams,
    V1CreateTaskPushNotificationConfigParams,
    V1CreateTaskPushNotificationConfigResult,
)


async def handle(
    params: V1CreateTaskPushNotificationConfigParams, ctx: RpcContext
) -> V1CreateTaskPushNotificationConfigResult:
    inner = push_config_v03_json(params.model_dump(mode="json", by_alias=True, exclude_none=True))
    ours = TasksPushNotificationConfigSetParams.model_validate({
        "method": TASKS_PUSH_NOTIFICATION_CONFIG_SET, "taskId": params.taskId,
        "pushNotificationConfig": inner,
    })
    return push_config_v1(await ctx.push.set(ctx.peer, ours.taskId, ours.pushNotificationConfig))
