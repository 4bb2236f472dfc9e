"""SendMessage: start a task on one of this node's agents, or continue one (0.3's
message/send, whose rules it keeps: `rules.send`)."""

from __future__ import annotations

from handlers import rules
from handlers.context import RpcContext
from synthorg.dialects.objects import push_config_v03_json
from synthorg.generated.models import (
    PushNotificationConfig,
    V1MessagePayload,
    V1SendMessageParams,
    V1SendMessageResult,
    V1Task,
    V1TaskPayload,
)


async def handle(params: V1SendMessageParams, ctx: RpcContext) -> V1SendMessageResult:
    config = params.configuration
    sent = config.taskPushNotificationConfig if config is not None else None
    # The push service keeps 0.3's form of a config (synthorg/push/configs.py).
    push = None if sent is None else PushNotificationConfig.model_validate(
        push_config_v03_json(sent.model_dump(mode="json", exclude_none=True))
    )
    answer = await rules.send(params, ctx, push)
    if isinstance(answer, V1Task):
        return V1TaskPayload(task=answer)
    return V1MessagePayload(message=answer)
