"""message/send: start a task on one of this node's agents, or continue one."""

from __future__ import annotations

from handlers import rules
from handlers.context import RpcContext
from synthorg.generated.models import MessageSendParams, MessageSendResult


async def handle(params: MessageSendParams, ctx: RpcContext) -> MessageSendResult:
    return await rules.send(params, ctx)
