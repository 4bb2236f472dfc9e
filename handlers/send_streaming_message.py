"""SendStreamingMessage: SendMessage answered as a stream of the task's events, to its final
one."""

from __future__ import annotations

from collections.abc import AsyncIterator

from handlers.context import RpcContext, Sequenced
from synthorg.generated.models import V1SendStreamingMessageParams, V1SendStreamingMessageResult


async def handle(
    params: V1SendStreamingMessageParams, ctx: RpcContext
) -> AsyncIterator[Sequenced[V1SendStreamingMessageResult]]:
    async for item in ctx.tasks.stream(ctx.peer, params, ctx.agent_id):
        yield item
