"""What both task stores share: a task's stored form, the failure written over a task whose
runner is gone, and the cache of tasks already validated.

The stores keep A2A 1.0: a task's row holds the document `V1Task` serialises (by alias, no
nulls) and the 1.0 state name (`TASK_STATE_WORKING`), and each logged event is a 1.0
StreamResponse (`{"task": ...}`, `{"statusUpdate": ...}`, ...). The core above the store still
works on 0.3 objects, so this module converts at the store's edge, both ways, and nowhere else
does: `dumps`/`loads` for a task, `events_v1`/`event_v03` for logged events, `state_v1`/
`state_v03` for the state column. The mapping itself is `synthorg.dialects.objects`.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from pydantic_core import to_json

from synthorg.clock import new_id
from synthorg.dialects.objects import (
    event_v03_json,
    event_v1_json,
    state_v03,
    state_v1,
    task_v03_json,
    task_v1_json,
)
from synthorg.generated.constants import (
    KIND_MESSAGE,
    KIND_STATUS_UPDATE,
    KIND_TEXT,
    ROLE_AGENT,
    STATE_FAILED,
)
from synthorg.generated.models import (
    Message,
    StreamEvent,
    Task,
    TaskStatus,
    TaskStatusUpdateEvent,
    TextPart,
)
from synthorg.store.tasks import RESTART_MESSAGE, UNFINISHED_STATES, StoredTask

__all__ = [
    "FAILED_V1", "UNFINISHED_V1", "LogForm", "TaskCache", "dumps", "dumps_v03", "event_row_v1",
    "event_v03", "events_v1", "final_event", "loads", "loads_v03", "log_events", "restart_failure",
    "state_v03", "state_v1", "task_event", "task_row_v1",
]

# The state column's values the stores' SQL names (1.0's names).
UNFINISHED_V1 = tuple(state_v1(state) for state in UNFINISHED_STATES)
FAILED_V1 = state_v1(STATE_FAILED)


def _text(document: Any) -> str:
    # pydantic's serializer: compact, UTF-8 kept, and several times json.dumps's speed.
    return to_json(document).decode()


def dumps_v03(task: Task) -> str:
    """The 0.3 document (what the delegation records keep)."""
    # The serializer itself: model_dump_json's wrapper costs as much again for a small task.
    return task.__pydantic_serializer__.to_json(task, by_alias=True, exclude_none=True).decode()


def loads_v03(body: str) -> Task:
    return Task.model_validate_json(body)


def dumps(task: Task) -> str:
    """The task as the stores keep it: its 1.0 document."""
    document = task.__pydantic_serializer__.to_python(
        task, mode="json", by_alias=True, exclude_none=True
    )
    return _text(task_v1_json(document))


def loads(body: str) -> Task:
    """A stored task (a 1.0 document) as the core's 0.3 Task."""
    return Task.model_validate(task_v03_json(json.loads(body)))


# -- rows written by a release that kept 0.3 (the schema 13 migrations) ----------------------
# A 0.3 object always has a `kind`; a 1.0 task or StreamResponse never has one at its top, so
# a row converted already is told apart and left as it is.


def task_row_v1(body: str, state: str) -> tuple[str, str] | None:
    """A tasks row's (body, state) in 1.0's form, converted as the write path converts a task
    (validated as a 0.3 Task first); None when the row is in 1.0's form already."""
    document = json.loads(body)
    if "kind" not in document:
        return None
    task = Task.model_validate(document)
    return dumps(task), state_v1(state_v03(state))


def event_row_v1(body: str) -> str | None:
    """A task_events row's body as a 1.0 StreamResponse; None when it is one already."""
    document = json.loads(body)
    if "kind" not in document:
        return None
    return _text(event_v1_json(document))


class LogForm(str):
    """An event given to a write already in the log's form (a 1.0 StreamResponse): stored as
    it is. Only `task_event` and `log_events` make one; any other event given is 0.3 JSON."""


def task_event(body: str) -> str:
    """The event that logs a task whose stored JSON (`dumps`) is `body`: a new task's first
    event is the task itself, so its write converts the task once, not twice."""
    return LogForm('{"task":' + body + "}")


def log_events(events: Iterable[StreamEvent]) -> list[str]:
    """The core's event objects as the log keeps them, converted from the objects themselves
    (no 0.3 JSON written to be parsed again): what a write's caller hands `create`/`update`."""
    logged: list[str] = []
    for event in events:
        document = event.__pydantic_serializer__.to_python(
            event, mode="json", by_alias=True, exclude_none=True
        )
        logged.append(LogForm(_text(event_v1_json(document))))
    return logged


def event_v1(event: str) -> str:
    """A 0.3 stream event (JSON) as the 1.0 StreamResponse the log keeps."""
    if isinstance(event, LogForm):
        return str.__str__(event)  # a plain str, for the drivers
    return _text(event_v1_json(json.loads(event)))


def events_v1(events: Iterable[str]) -> list[str]:
    return [event_v1(event) for event in events]


def event_v03(body: str) -> str:
    """A logged StreamResponse as the 0.3 stream event it stands for."""
    return _text(event_v03_json(json.loads(body)))


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
        self._entries[key] = (stored, size)
        self._bytes += size
        while self._bytes > self._max_bytes:
            _, (_, dropped) = self._entries.popitem(last=False)
            self._bytes -= dropped


def restart_failure(task: Task, now_iso: str) -> Task:
    message = Message(
        kind=KIND_MESSAGE,
        role=ROLE_AGENT,
        messageId=new_id(),
        parts=[TextPart(kind=KIND_TEXT, text=RESTART_MESSAGE)],
        taskId=task.id,
        contextId=task.contextId,
    )
    return task.model_copy(
        update={"status": TaskStatus(state=STATE_FAILED, message=message, timestamp=now_iso)}
    )


def final_event(task: Task) -> str:
    """The event logged (as the log keeps it) with a write that ends a task outside its
    agent's run (recovery)."""
    event = TaskStatusUpdateEvent(
        kind=KIND_STATUS_UPDATE, taskId=task.id, contextId=task.contextId, status=task.status,
        final=True,
    )
    return event_v1(event.model_dump_json(by_alias=True, exclude_none=True))
