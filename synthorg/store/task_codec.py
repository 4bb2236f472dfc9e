"""What both task stores share: a task's stored form, the failure written over a task whose
runner is gone, and the cache of tasks already validated.

The stores keep A2A 1.0, as the core above them works on it: a task's row holds the document
`V1Task` serialises (by alias, no nulls) and its 1.0 state name (`TASK_STATE_WORKING`), and
each logged event is a 1.0 StreamResponse (`{"task": ...}`, `{"statusUpdate": ...}`, ...), so
nothing is converted on the way in or out. Rows a release that kept 0.3 wrote are converted
once, by the schema 13 migrations (`task_row_v1`, `event_row_v1`).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from pydantic_core import to_json

from synthorg.clock import new_id
from synthorg.dialects.objects import event_v1_json, state_v03, state_v1, task_v1_json
from synthorg.generated.constants import TASK_STATE_FAILED, V1_ROLE_AGENT
from synthorg.generated.models import (
    Task,
    V1Message,
    V1StatusUpdatePayload,
    V1Task,
    V1TaskStatus,
    V1TaskStatusUpdateEvent,
    V1TextPart,
)
from synthorg.settled import settle
from synthorg.store.tasks import RESTART_MESSAGE, StoredTask


def text(document: Any) -> str:
    # pydantic's serializer: compact, UTF-8 kept, and several times json.dumps's speed.
    return to_json(document).decode()


def dumps_v03(task: Task) -> str:
    """The 0.3 document (what the delegation records keep)."""
    # The serializer itself: model_dump_json's wrapper costs as much again for a small task.
    return task.__pydantic_serializer__.to_json(task, by_alias=True, exclude_none=True).decode()


def loads_v03(body: str) -> Task:
    return Task.model_validate_json(body)


def dumps(task: V1Task) -> str:
    """The task as the stores keep it."""
    return task.__pydantic_serializer__.to_json(task, by_alias=True, exclude_none=True).decode()


def loads(body: str) -> V1Task:
    return V1Task.model_validate_json(body)


def task_event(body: str) -> str:
    """The event that logs a task whose stored JSON (`dumps`) is `body`: a new task's first
    event is the task itself, so its write serialises the task once, not twice."""
    return '{"task":' + body + "}"


# -- rows written by a release that kept 0.3 (the schema 13 migrations) ----------------------
# A 0.3 object always has a `kind`; a 1.0 task or StreamResponse never has one at its top, so
# a row converted already is told apart and left as it is.


def task_row_v1(body: str, state: str) -> tuple[str, str] | None:
    """A tasks row's (body, state) in 1.0's form (validated as a 0.3 Task first); None when
    the row is in 1.0's form already."""
    document = json.loads(body)
    if "kind" not in document:
        return None
    task = Task.model_validate(document)
    valid = task.__pydantic_serializer__.to_python(
        task, mode="json", by_alias=True, exclude_none=True
    )
    return text(task_v1_json(valid)), state_v1(state_v03(state))


def event_row_v1(body: str) -> str | None:
    """A task_events row's body as a 1.0 StreamResponse; None when it is one already."""
    document = json.loads(body)
    if "kind" not in document:
        return None
    return text(event_v1_json(document))


class TaskCache:
    """Validated tasks by (peer, id) and version, least recently used first out, bounded by
    the size of their stored bodies.

    Filled by reads only. A task just written is usually not read again at that version
    (message/send answers it; its next write changes the version). Every cached task is a
    few dozen objects that the garbage collector traverses: cached on every write, under a
    steady message/send load, they made a collection of 190 ms every ~20,000 requests, and
    each one held up every request in flight."""

    def __init__(self, max_bytes: int = 16 * 1024 * 1024) -> None:
        self._max_bytes = max_bytes
        self._bytes = 0
        self._entries: OrderedDict[tuple[str, str], tuple[StoredTask, int]] = OrderedDict()

    def get(self, key: tuple[str, str], version: int) -> StoredTask | None:
        entry = self._entries.get(key)
        if entry is None or entry[0].version != version:
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def version_of(self, key: tuple[str, str]) -> int:
        """The version cached for `key`, or -1 (no version is negative)."""
        entry = self._entries.get(key)
        return -1 if entry is None else entry[0].version

    def put(self, key: tuple[str, str], stored: StoredTask, size: int) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        if size > self._max_bytes // 4:
            return  # one huge task would push out everything else
        settle(stored.task)  # handed out for every read of its version
        self._entries[key] = (stored, size)
        self._bytes += size
        while self._bytes > self._max_bytes:
            _, (_, dropped) = self._entries.popitem(last=False)
            self._bytes -= dropped


def restart_failure(task: V1Task, now_iso: str) -> V1Task:
    message = V1Message(
        role=V1_ROLE_AGENT,
        messageId=new_id(),
        parts=[V1TextPart(text=RESTART_MESSAGE)],
        taskId=task.id,
        contextId=task.contextId,
    )
    return task.model_copy(
        update={"status": V1TaskStatus(state=TASK_STATE_FAILED, message=message,
                                       timestamp=now_iso)}
    )


def final_event(task: V1Task) -> str:
    """The event logged with a write that ends a task outside its agent's run (recovery)."""
    event = V1StatusUpdatePayload(statusUpdate=V1TaskStatusUpdateEvent(
        taskId=task.id, contextId=task.contextId, status=task.status,
    ))
    return event.model_dump_json(by_alias=True, exclude_none=True)
