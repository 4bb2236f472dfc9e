"""Durable A2A tasks and `(peer, messageId)` idempotency keys: the interface.

Callers see async methods over the generated `Task` model. Every multi-row step is one call,
so each implementation owns its transactions: a task and the key that created it commit
together, and so do a follow-up's key, its message and the outcome it led to. Writes over an
existing task compare the version they read (compare-and-set), which serialises writers in
different processes or replicas without holding a lock across an agent's work.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from synthorg.generated.models import Task

RESTART_MESSAGE = "the node restarted before this task finished"
UNFINISHED_STATES = ("submitted", "working")


class StoredTask(NamedTuple):
    task: Task
    version: int  # moves on every write; the next write must name it


class MessageKey(NamedTuple):
    message_id: str
    digest: str  # the message's content hash: a retry has the same, a reuse does not
    task_id: str = ""  # the task the key was recorded for, when read back


class KeyRecorded(Exception):
    """The `(peer, messageId)` key is already recorded; nothing was written."""

    def __init__(self, key: MessageKey) -> None:
        super().__init__(key.task_id)
        self.key = key


class TaskStore(Protocol):
    async def get(self, peer: str, task_id: str) -> StoredTask | None:
        """The task, or None when missing or owned by another peer (indistinguishable)."""
        ...

    async def message_key(self, peer: str, message_id: str) -> MessageKey | None: ...

    async def create(self, peer: str, key: MessageKey, task: Task) -> StoredTask:
        """Record the key and the task together; KeyRecorded when the key exists."""
        ...

    async def update(
        self, peer: str, task: Task, version: int, key: MessageKey | None = None
    ) -> StoredTask:
        """Replace the task if it is still at `version` (and record `key` with it).

        VersionConflict when another writer got there first, TaskNotFound when the peer has
        no such task, KeyRecorded when `key` is already recorded; nothing is written then."""
        ...

    async def recover(self, now_iso: str) -> int:
        """Fail every task left submitted or working by a previous run; returns the count."""
        ...

    async def list(self, peer: str | None = None, limit: int = 100) -> list[Task]:
        """Newest first, optionally only one peer's."""
        ...
