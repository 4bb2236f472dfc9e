"""tasks/resubscribe: follow the caller's task again, from the Last-Event-ID it last saw."""

from __future__ import annotations

from collections.abc import AsyncIterator

from handlers import rules
from handlers.context import RpcContext, Sequenced
from synthorg.dialects.objects import stream_item_v03
from synthorg.generated.models import TasksResubscribeParams, TasksResubscribeResult


async def handle(
    params: TasksResubscribeParams, ctx: RpcContext
) -> AsyncIterator[Sequenced[TasksResubscribeResult]]:
    after = rules.resume_after(ctx.last_event_id)
    async for item in ctx.tasks.resubscribe(ctx.peer, params.id, after):
        yield stream_item_v03(item)
