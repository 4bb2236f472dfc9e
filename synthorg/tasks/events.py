"""A task's stream events, derived from each write over it: what changed between the task
before the write and after it.

A new task is logged as the Task itself; afterwards a changed status is a
TaskStatusUpdateEvent and a new or grown artifact a TaskArtifactUpdateEvent (`append` when
only parts were added, carrying just those). The status event is `final` when the task ends
or waits for input: a stream ends after it.
"""

from __future__ import annotations

# Where a stream ends: the task is final, or it waits for the caller.
from synthorg.dialects.objects import STREAM_END_STATES as STREAM_END_STATES
from synthorg.generated.constants import (
    KIND_ARTIFACT_UPDATE,
    KIND_STATUS_UPDATE,
)
from synthorg.generated.models import (
    Artifact,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
)
from synthorg.store.task_codec import log_events


def ends_stream(event: StreamEvent) -> bool:
    if isinstance(event, TaskStatusUpdateEvent):
        return event.final
    # In the log a Task (the first event) is always followed by its status when it is final;
    # a Message answers the stream on its own.
    return not isinstance(event, Task | TaskArtifactUpdateEvent)


def task_events(before: Task | None, after: Task, last_chunk: bool = False) -> list[StreamEvent]:
    if before is None:
        events: list[StreamEvent] = [after]
        if after.status.state in STREAM_END_STATES:
            events.append(_status(after))
        return events
    events = _artifact_events(before, after, last_chunk)
    if after.status != before.status:
        events.append(_status(after))
    return events


def serialised(events: list[StreamEvent]) -> list[str]:
    """The events as a write logs them (the task log's form, see synthorg.store.task_codec)."""
    return log_events(events)


def _status(task: Task) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        kind=KIND_STATUS_UPDATE,
        taskId=task.id,
        contextId=task.contextId,
        status=task.status,
        final=task.status.state in STREAM_END_STATES,
    )


def _artifact_events(before: Task, after: Task, last_chunk: bool) -> list[StreamEvent]:
    known = {a.artifactId: a for a in before.artifacts or []}
    events: list[StreamEvent] = []
    for artifact in after.artifacts or []:
        old = known.get(artifact.artifactId)
        if old == artifact:
            continue
        grown = old is not None and artifact.parts[: len(old.parts)] == old.parts
        sent: Artifact = (
            artifact.model_copy(update={"parts": artifact.parts[len(old.parts):]})
            if grown and old is not None
            else artifact
        )
        # Flags that do not hold are omitted (the models take no nulls).
        event = TaskArtifactUpdateEvent(
            kind=KIND_ARTIFACT_UPDATE, taskId=after.id, contextId=after.contextId, artifact=sent
        )
        flags: dict[str, object] = {"append": True} if grown else {}
        if last_chunk:
            flags["lastChunk"] = True
        events.append(event.model_copy(update=flags) if flags else event)
    return events
