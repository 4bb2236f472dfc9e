"""message/stream: message/send answered as a stream of the task's events, to its final one."""

from __future__ import annotations

from collections.abc import AsyncIterator

from handlers.context import RpcContext, Sequenced
from synthorg.generated.models import MessageStreamParams, MessageStreamResult


async def handle(
    params: MessageStreamParams, ctx: RpcContext
) -> AsyncIterator[Sequenced[MessageStreamResult]]:
    async for event in ctx.tasks.stream(ctx.peer, params, ctx.agent_id):
        yield event
