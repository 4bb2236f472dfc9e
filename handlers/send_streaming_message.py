"""SendStreamingMessage: SendMessage answered as a stream of the task's events, to its final
one."""

from __future__ import annotations

from collections.abc import AsyncIterator

from handlers.context import RpcContext, Sequenced
from synthorg.dialects.objects import send_v03_json, stream_response_v1
from synthorg.generated.constants import MESSAGE_STREAM
from synthorg.generated.models import (
    MessageStreamParams,
    V1SendStreamingMessageParams,
    V1SendStreamingMessageResult,
)


async def handle(
    params: V1SendStreamingMessageParams, ctx: RpcContext
) -> AsyncIterator[Sequenced[V1SendStreamingMessageResult]]:
    ours = MessageStreamParams.model_validate({"method": MESSAGE_STREAM, **send_v03_json(params)})
    async for item in ctx.tasks.stream(ctx.peer, ours, ctx.agent_id):
        yield Sequenced(item.seq, stream_response_v1(item.event), quiet=item.quiet)
