"""message/send: start a task on one of this node's agents, or continue one."""

from __future__ import annotations

from handlers import rules
from handlers.context import RpcContext
from synthorg.dialects.objects import message_from_v1, send_v1_json, task_v03
from synthorg.generated.constants import V1_SEND_MESSAGE
from synthorg.generated.models import (
    MessageSendParams,
    MessageSendResult,
    V1SendMessageParams,
    V1Task,
)


async def handle(params: MessageSendParams, ctx: RpcContext) -> MessageSendResult:
    ours = V1SendMessageParams.model_validate({"method": V1_SEND_MESSAGE, **send_v1_json(params)})
    push = params.configuration.pushNotificationConfig if params.configuration else None
    answer = await rules.send(ours, ctx, push)
    return task_v03(answer) if isinstance(answer, V1Task) else message_from_v1(answer)
