"""The rules an operation keeps in either dialect, in one place: the 1.0 handlers and the
0.3 edge (`synthorg/dialects/v03/`) both call them, each with its own params translated."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.errors import InvalidParams
from synthorg.generated.models import (
    PushNotificationConfig,
    V1Message,
    V1SendMessageParams,
    V1Task,
)
from synthorg.http.numbers import ascii_int

MAX_EVENT_ID_DIGITS = 18  # the spec's pattern for the header; always within a 64-bit id


async def send(
    params: V1SendMessageParams, ctx: RpcContext, push: PushNotificationConfig | None
) -> V1Task | V1Message:
    """Start or continue a task; a push config sent with the message (`push`, in the form
    the push service keeps) is refused before any task is made for it, and registered on
    the task the send answers."""
    if push is not None:
        await ctx.push.check(ctx.peer, push)
    answer = await ctx.tasks.send(ctx.peer, params, ctx.agent_id)
    # Registering pushes the task's current state if it moved on; a direct reply (a
    # Message) has no task to push about.
    if push is not None and isinstance(answer, V1Task):
        await ctx.push.set(ctx.peer, answer.id, push)
    return answer


def resume_after(last_event_id: str | None) -> int | None:
    """The sequence number a resumed stream starts after (its Last-Event-ID); None: the
    task as it is now."""
    if last_event_id is None:
        return None
    # ASCII digits only, bounded: a superscript or 5,000 digits is a refusal, not a fault
    after = ascii_int(last_event_id.strip(" \t"), MAX_EVENT_ID_DIGITS)
    if after is None:
        raise InvalidParams("Invalid params: Last-Event-ID is not an event id of this node")
    return after
