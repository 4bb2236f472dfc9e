"""SubscribeToTask: follow the caller's task, from the Last-Event-ID it last saw (0.3's
tasks/resubscribe), except that a task already final is not followed."""

from __future__ import annotations

from collections.abc import AsyncIterator

from handlers import rules
from handlers.context import RpcContext, Sequenced
from synthorg.errors import UnsupportedOperation
from synthorg.generated.constants import V1_TERMINAL_STATES
from synthorg.generated.models import (
    V1SubscribeToTaskParams,
    V1SubscribeToTaskResult,
    V1TaskPayload,
)


async def handle(
    params: V1SubscribeToTaskParams, ctx: RpcContext
) -> AsyncIterator[Sequenced[V1SubscribeToTaskResult]]:
    after = rules.resume_after(ctx.last_event_id)
    resuming = after is not None
    async for item in ctx.tasks.resubscribe(ctx.peer, params.id, after):
        # 1.0 refuses to follow a task that is already final (0.3 answers it and ends);
        # a resumed stream (Last-Event-ID) still gets the events it missed.
        event = item.event
        if (not resuming and isinstance(event, V1TaskPayload)
                and event.task.status.state in V1_TERMINAL_STATES):
            raise UnsupportedOperation()
        resuming = True
        yield item
