"""message/stream: message/send answered as a stream of the task's events, to its final one."""

from __future__ import annotations

from collections.abc import AsyncIterator

from handlers.context import RpcContext, Sequenced
from synthorg.dialects.objects import send_v1_json, stream_item_v03
from synthorg.generated.constants import V1_SEND_STREAMING_MESSAGE
from synthorg.generated.models import (
    MessageStreamParams,
    MessageStreamResult,
    V1SendStreamingMessageParams,
)


async def handle(
    params: MessageStreamParams, ctx: RpcContext
) -> AsyncIterator[Sequenced[MessageStreamResult]]:
    ours = V1SendStreamingMessageParams.model_validate(
        {"method": V1_SEND_STREAMING_MESSAGE, **send_v1_json(params)}
    )
    async for item in ctx.tasks.stream(ctx.peer, ours, ctx.agent_id):
        yield stream_item_v03(item)
