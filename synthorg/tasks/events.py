"""A task's stream events, derived from each write over it: what changed between the task
before the write and after it, as A2A 1.0 StreamResponses.

A new task is logged as the task itself (`{"task": ...}`); afterwards a changed status is a
`statusUpdate` and a new or grown artifact an `artifactUpdate` (`append` when only parts were
added, carrying just those). 1.0's status update has no `final`: a stream ends after the
status of a task that is final or waits for input (STREAM_END_STATES).
"""

from __future__ import annotations

from synthorg.dialects.objects import V1_STREAM_END_STATES
from synthorg.generated.models import (
    V1Artifact,
    V1ArtifactUpdatePayload,
    V1MessagePayload,
    V1StatusUpdatePayload,
    V1StreamResponse,
    V1Task,
    V1TaskArtifactUpdateEvent,
    V1TaskPayload,
    V1TaskStatusUpdateEvent,
)

# Where a stream ends: the task is final, or it waits for the caller.
STREAM_END_STATES = V1_STREAM_END_STATES


def ends_stream(event: V1StreamResponse) -> bool:
    if isinstance(event, V1StatusUpdatePayload):
        return event.statusUpdate.status.state in STREAM_END_STATES
    # In the log a task (the first event) is always followed by its status when it ends a
    # stream; a message answers the stream on its own.
    return isinstance(event, V1MessagePayload)


def task_events(
    before: V1Task | None, after: V1Task, last_chunk: bool = False
) -> list[V1StreamResponse]:
    if before is None:
        events: list[V1StreamResponse] = [V1TaskPayload.model_construct(task=after)]
        if after.status.state in STREAM_END_STATES:
            events.append(_status(after))
        return events
    events = _artifact_events(before, after, last_chunk)
    if after.status != before.status:
        events.append(_status(after))
    return events


def serialised(events: list[V1StreamResponse]) -> list[str]:
    # The serializer itself, as task_codec.dumps: the same JSON as model_dump_json, cheaper.
    return [
        e.__pydantic_serializer__.to_json(e, by_alias=True, exclude_none=True).decode()
        for e in events
    ]


def _status(task: V1Task) -> V1StatusUpdatePayload:
    # Parts of a task already valid: built without validating them again.
    return V1StatusUpdatePayload.model_construct(statusUpdate=V1TaskStatusUpdateEvent(
        taskId=task.id, contextId=task.contextId, status=task.status,
    ))


def _artifact_events(before: V1Task, after: V1Task, last_chunk: bool) -> list[V1StreamResponse]:
    known = {a.artifactId: a for a in before.artifacts or []}
    events: list[V1StreamResponse] = []
    for artifact in after.artifacts or []:
        old = known.get(artifact.artifactId)
        if old == artifact:
            continue
        grown = old is not None and artifact.parts[: len(old.parts)] == old.parts
        sent: V1Artifact = (
            artifact.model_copy(update={"parts": artifact.parts[len(old.parts):]})
            if grown and old is not None
            else artifact
        )
        # Flags that do not hold are omitted (the models take no nulls).
        event = V1TaskArtifactUpdateEvent(taskId=after.id, contextId=after.contextId, artifact=sent)
        flags: dict[str, object] = {"append": True} if grown else {}
        if last_chunk:
            flags["lastChunk"] = True
        events.append(V1ArtifactUpdatePayload.model_construct(
            artifactUpdate=event.model_copy(update=flags) if flags else event
        ))
    return events
