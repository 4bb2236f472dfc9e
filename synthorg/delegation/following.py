"""Following a delegated task by stream: `tasks/resubscribe` on the peer, resumed exactly.

The delegation record exists before the stream opens (it names the peer and the downstream
task), so a follower that loses the stream (the peer restarted, the connection dropped) or
its own process resubscribes: with `Last-Event-ID` the last event it applied, so the peer's
durable log replays exactly what it missed; without one (a new process), from the task as
it is. Each event is applied to the record's copy of the task, and the record stored, so the
record reads as it would after a poll or a push, and whoever relays it (the `peer` executor,
the CLI) does so the same way whichever path updated it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Collection

from pydantic import ValidationError

from synthorg.delegation.delegator import Delegator
from synthorg.delegation.errors import PeerError, PeerMisconfigured, PeerProtocolError, PeerRpcError
from synthorg.delegation.sse_client import Events, stream_call
from synthorg.generated.constants import V1_SUBSCRIBE_TO_TASK
from synthorg.generated.models import (
    V1Artifact,
    V1MessagePayload,
    V1StatusUpdatePayload,
    V1StreamResponse,
    V1SubscribeToTaskParams,
    V1Task,
    V1TaskPayload,
)
from synthorg.observability.events import a2a as events
from synthorg.observability.log import emit
from synthorg.store.delegations import Delegation

FIRST_RETRY, MAX_RETRY = 0.2, 5.0  # seconds before resubscribing after a dropped stream
MAX_FAILURES = 30  # consecutive failed subscriptions before the follower gives up


class StreamGaveUp(PeerError):
    """The peer could not be followed by stream (refused, or unreachable too long)."""


def apply_event(task: V1Task, event: V1StreamResponse, remote_task_id: str) -> V1Task:
    """The task after one stream event (a task, a status update or an artifact update)."""
    if isinstance(event, V1TaskPayload):
        if event.task.id != remote_task_id:
            raise PeerProtocolError("a stream event for another task")
        return event.task
    if isinstance(event, V1MessagePayload):
        if event.message.taskId != remote_task_id:
            raise PeerProtocolError("a stream event for another task")
        return task  # nothing of the task changes
    if isinstance(event, V1StatusUpdatePayload):
        if event.statusUpdate.taskId != remote_task_id:
            raise PeerProtocolError("a stream event for another task")
        return task.model_copy(update={"status": event.statusUpdate.status})
    update = event.artifactUpdate
    if update.taskId != remote_task_id:
        raise PeerProtocolError("a stream event for another task")
    artifact = update.artifact
    artifacts = list(task.artifacts or [])
    for index, existing in enumerate(artifacts):
        if existing.artifactId == artifact.artifactId:
            if update.append:
                artifact = _appended(existing, artifact)
            artifacts[index] = artifact
            break
    else:
        artifacts.append(artifact)
    return task.model_copy(update={"artifacts": artifacts})


def _appended(existing: V1Artifact, chunk: V1Artifact) -> V1Artifact:
    """`existing` with `chunk`'s parts after its own, validated (the spec bounds the parts
    of an artifact, and a stream may go on appending past it)."""
    try:
        return V1Artifact.model_validate({
            **{name: value for name, value in existing if value is not None},
            "parts": [*existing.parts, *chunk.parts],
        })
    except ValidationError as exc:
        raise PeerProtocolError(
            f"an artifact appended past the spec's bounds ({exc.error_count()} problems)"
        ) from None


async def follow_stream(
    delegator: Delegator,
    record: Delegation,
    until: Collection[str],
    on_update: Callable[[Delegation], Awaitable[None]],
    on_trouble: Callable[[Delegation, PeerError], Awaitable[None]] | None = None,
    *,
    events: Events | None = None,
    last: int | None = None,
) -> Delegation:
    """Follow the record's downstream task by stream until its state is in `until`; each
    event applied is stored and handed to `on_update`. `events` is a stream already open
    (what message/stream goes on sending after the Task), `last` the sequence number read.
    A dropped stream is resumed after it (backoff with a cap); StreamGaveUp after
    MAX_FAILURES failures in a row to reach the peer, or at once when it refuses the
    subscription or sends what is not a valid event (a stream that would fail the same way
    again: the caller polls instead)."""
    delay, failures = FIRST_RETRY, 0
    if events is not None and record.state in until:
        await events.aclose()
    while record.state not in until:
        try:
            stream, events = events, None  # a stream already open (message/stream) first
            if stream is None:
                client = await delegator.record_client(record)
                params = V1SubscribeToTaskParams(method=V1_SUBSCRIBE_TO_TASK,
                                                 id=record.remote_task_id)
                stream = stream_call(client, params, last)
            async with contextlib.aclosing(stream):
                async for seq, event in stream:
                    task = apply_event(record.task, event, record.remote_task_id)
                    record = await delegator.store.update(record.id, task)
                    if seq is not None:
                        last = seq
                    delay, failures = FIRST_RETRY, 0
                    await on_update(record)
                    if record.state in until:
                        return record
            # The peer ended the stream before the task settled: resubscribe, after a pause.
        except (PeerRpcError, PeerProtocolError, PeerMisconfigured) as exc:  # not a stream
            # we can follow (a refusal, a bad answer, a call the record says not to make)
            raise _gave_up(record, exc) from None
        except PeerError as exc:
            failures += 1
            if failures >= MAX_FAILURES:
                raise _gave_up(record, exc) from None
            if on_trouble is not None:
                await on_trouble(record, exc)
        await asyncio.sleep(delay)
        delay = min(delay * 2, MAX_RETRY)
    return record


def _gave_up(record: Delegation, exc: PeerError) -> StreamGaveUp:
    emit(events.FOLLOW_STREAM_ABANDONED, level="warning", peer_name=record.peer,
         task_id=record.remote_task_id, reason=str(exc))
    return StreamGaveUp(str(exc))
