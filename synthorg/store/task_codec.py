"""What both task stores share: a task's stored form, the failure written over a task whose
runner is gone, and the cache of tasks already validated."""

from __future__ import annotations

from collections import OrderedDict

from synthorg.clock import new_id
from synthorg.generated.constants import (
    KIND_MESSAGE,
    KIND_STATUS_UPDATE,
    KIND_TEXT,
    ROLE_AGENT,
    STATE_FAILED,
)
from synthorg.generated.models import Message, Task, TaskStatus, TaskStatusUpdateEvent, TextPart
from synthorg.store.tasks import RESTART_MESSAGE, StoredTask


def dumps(task: Task) -> str:
    # The serializer itself: model_dump_json's wrapper costs as much again for a small task.
    return task.__pydantic_serializer__.to_json(task, by_alias=True, exclude_none=True).decode()


def loads(body: str) -> Task:
    return Task.model_validate_json(body)


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
    """The event logged with a write that ends a task outside its agent's run (recovery)."""
    event = TaskStatusUpdateEvent(
        kind=KIND_STATUS_UPDATE, taskId=task.id, contextId=task.contextId, status=task.status,
        final=True,
    )
    return event.model_dump_json(by_alias=True, exclude_none=True)
