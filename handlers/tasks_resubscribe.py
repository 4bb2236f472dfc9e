"""tasks/resubscribe: follow the caller's task again, from the Last-Event-ID it last saw."""

from __future__ import annotations

from collections.abc import AsyncIterator

from handlers.context import RpcContext, Sequenced
from synthorg.errors import InvalidParams
from synthorg.generated.models import TasksResubscribeParams, TasksResubscribeResult
from synthorg.http.numbers import ascii_int

MAX_EVENT_ID_DIGITS = 18  # the spec's pattern for the header; always within a 64-bit id


def _after(last_event_id: str | None) -> int | None:
    if last_event_id is None:
        return None
    # ASCII digits only, bounded: a superscript or 5,000 digits is a refusal, not a fault
    after = ascii_int(last_event_id.strip(" \t"), MAX_EVENT_ID_DIGITS)
    if after is None:
        raise InvalidParams("Invalid params: Last-Event-ID is not an event id of this node")
    return after


async def handle(
    params: TasksResubscribeParams, ctx: RpcContext
) -> AsyncIterator[Sequenced[TasksResubscribeResult]]:
    async for event in ctx.tasks.resubscribe(ctx.peer, params.id, _after(ctx.last_event_id)):
        yield event
