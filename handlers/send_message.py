"""SendMessage: start a task on one of this node's agents, or continue one (0.3's
message/send, whose rules it keeps: `rules.send`)."""

from __future__ import annotations

from handlers import rules
from handlers.context import RpcContext
from synthorg.dialects.objects import message_to_v1, send_v03_json, task_v1
from synthorg.generated.constants import MESSAGE_SEND
from synthorg.generated.models import (
    Message,
    MessageSendParams,
    V1MessagePayload,
    V1SendMessageParams,
    V1SendMessageResult,
    V1TaskPayload,
)


async def handle(params: V1SendMessageParams, ctx: RpcContext) -> V1SendMessageResult:
    ours = MessageSendParams.model_validate({"method": MESSAGE_SEND, **send_v03_json(params)})
    answer = await rules.send(ours, ctx)
    if isinstance(answer, Message):  # the agent's direct reply: no task
        return V1MessagePayload(message=message_to_v1(answer))
    return V1TaskPayload(task=task_v1(answer))
