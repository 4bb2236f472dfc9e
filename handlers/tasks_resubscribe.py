"""tasks/resubscribe: follow the caller's task again, from the Last-Event-ID it last saw."""

from __future__ import annotations

from collections.abc import AsyncIterator

from handlers.context import RpcContext, Sequenced
from synthorg.errors import InvalidParams
from synthorg.generated.models import TasksResubscribeParams, TasksResubscribeResult

MAX_EVENT_ID = 2**63 - 1


def _after(last_event_id: str | None) -> int | None:
    if last_event_id is None:
        return None
    text = last_event_id.strip()
    if not text.isdigit() or int(text) > MAX_EVENT_ID:
        raise InvalidParams("Invalid params: Last-Event-ID is not an event id of this node")
    return int(text)


async def handle(
    params: TasksResubscribeParams, ctx: RpcContext
) -> AsyncIterator[Sequenced[TasksResubscribeResult]]:
    async for event in ctx.tasks.resubscribe(ctx.peer, params.id, _after(ctx.last_event_id)):
        yield event
