"""Durable A2A tasks and `(peer, messageId)` idempotency keys: the interface.

Callers see async methods over the generated A2A 1.0 `V1Task` model (its states by 1.0's
names, TASK_STATE_WORKING); logged events are 1.0 StreamResponse JSON. Every multi-row step is
one call, so each implementation owns its transactions: a task and the key that created it commit
together, and so do a follow-up's key, its message and the outcome it led to. Writes over an
existing task compare the version they read (compare-and-set), which serialises writers in
different processes or replicas without holding a lock across an agent's work.

Each store handle belongs to one runner: the process (a worker, a replica) that writes
through it, named afresh at every start. A task left submitted or working records its
runner, and the runner renews a lease in the store while it lives (`heartbeat`). `recover`
fails only the unfinished tasks whose runner is gone: its lease ran out, or it retired. So a
replica that starts, or sweeps, never fails a task another live replica is running.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from synthorg.generated.constants import TASK_STATE_SUBMITTED, TASK_STATE_WORKING
from synthorg.generated.models import V1Task

RESTART_MESSAGE = "the node restarted before this task finished"
UNFINISHED_STATES = (TASK_STATE_SUBMITTED, TASK_STATE_WORKING)


DEFAULT_LEASE_SECONDS = 15.0


def new_runner_id() -> str:
    return secrets.token_hex(8)


@dataclass(frozen=True)
class Runner:
    """Who writes through a store handle, and how long its lease lasts after a heartbeat
    (a runner renews it every `lease_seconds / 5`)."""

    id: str = field(default_factory=new_runner_id)
    lease_seconds: float = DEFAULT_LEASE_SECONDS

    @property
    def heartbeat_every(self) -> float:
        return self.lease_seconds / 5


class StoredTask(NamedTuple):
    task: V1Task
    version: int  # moves on every write; the next write must name it


class MessageKey(NamedTuple):
    message_id: str
    digest: str  # the message's content hash: a retry has the same, a reuse does not
    task_id: str = ""  # the task the key was recorded for, when read back


class TaskFilter(NamedTuple):
    """Which of one peer's tasks a page lists (every field optional)."""

    context_id: str | None = None
    state: str | None = None  # a V1TaskState (TASK_STATE_WORKING)
    updated_since: str | None = None  # utc_now() form: the status changed at or after it


class TaskPageRows(NamedTuple):
    """One page, newest first: each task with its cursor, and how many tasks match."""

    rows: list[tuple[int, V1Task]]
    total: int


class KeyRecorded(Exception):
    """The `(peer, messageId)` key is already recorded; nothing was written."""

    def __init__(self, key: MessageKey) -> None:
        super().__init__(key.task_id)
        self.key = key


# Each write over a task may log events (a stream's events, see synthorg.tasks.events) in
# the same transaction; the write that makes version v numbers its events from
# v * EVENT_SLOTS + 1, so a task's events are ordered as its writes are, with no counter to
# share between writers. A write logs at most EVENT_SLOTS - 1 events.
EVENT_SLOTS = 1024


def event_seq(version: int, index: int) -> int:
    """The sequence number of the `index`th event logged by the write that made `version`."""
    if not 0 <= index < EVENT_SLOTS - 1:
        raise ValueError(f"a write logs at most {EVENT_SLOTS - 1} events")
    return version * EVENT_SLOTS + index + 1


def snapshot_seq(version: int) -> int:
    """The sequence number a task read at `version` stands at: every event logged by the
    writes up to that version is at or below it, every later one above."""
    return (version + 1) * EVENT_SLOTS - 1


class LoggedEvent(NamedTuple):
    seq: int
    body: str  # the event as JSON text: a 1.0 StreamResponse


class TaskStore(Protocol):
    @property
    def runner(self) -> Runner:
        """Who writes through this handle (stamped on the unfinished tasks it writes)."""
        ...

    async def get(self, peer: str, task_id: str) -> StoredTask | None:
        """The task, or None when missing or owned by another peer (indistinguishable)."""
        ...

    async def message_key(self, peer: str, message_id: str) -> MessageKey | None: ...

    async def create(
        self, peer: str, key: MessageKey, task: V1Task, events: Sequence[str] = (),
        *, body: str | None = None,
    ) -> StoredTask:
        """Record the key and the task (and log its events) together; KeyRecorded when the
        key exists. `body`: the task's stored JSON (`task_codec.dumps`) when the caller has
        serialised it already. `events` (here and in `update`): 1.0 StreamResponse JSON."""
        ...

    async def update(
        self,
        peer: str,
        task: V1Task,
        version: int,
        key: MessageKey | None = None,
        events: Sequence[str] = (),
    ) -> StoredTask:
        """Replace the task if it is still at `version` (and record `key`, and log `events`,
        with it).

        VersionConflict when another writer got there first, TaskNotFound when the peer has
        no such task, KeyRecorded when `key` is already recorded; nothing is written then."""
        ...

    async def events_after(
        self, peer: str, task_id: str, after: int, limit: int
    ) -> list[LoggedEvent]:
        """The task's logged events with a sequence number above `after`, in order, at most
        `limit`; none when the peer has no such task."""
        ...

    async def heartbeat(self) -> None:
        """Renew this runner's lease (registering the runner at the first call)."""
        ...

    async def retire(self) -> None:
        """This runner stops: its lease ends now, and its unfinished tasks are recoverable."""
        ...

    async def adopt(
        self, resumable: Callable[[V1Task], bool], *, others_gone: bool = False
    ) -> list[tuple[str, StoredTask]]:
        """Take over the tasks left submitted or working by a runner that is gone (as
        `recover` judges it) for which `resumable` holds: this runner becomes theirs, so
        `recover` spares them, and they are returned as (peer, task) for the caller to go on
        with (an onward delegation whose downstream task still runs is followed again)."""
        ...

    async def recover(self, now_iso: str, *, others_gone: bool = False) -> int:
        """Fail every task left submitted or working by a runner that is gone (lease run out
        or retired; with `others_gone`, every runner but this one, as when the only server of
        a store starts); returns the count. Runners that are gone are forgotten."""
        ...

    async def live_runners(self) -> int:
        """How many runners other than this one hold a lease (a heartbeat within their
        lease): the node processes serving this store now."""
        ...

    async def count_by_state(self) -> dict[str, int]:
        """How many tasks are in each state, by 1.0 name (for the metrics; a state with none
        is absent)."""
        ...

    async def list(self, peer: str | None = None, limit: int = 100) -> list[V1Task]:
        """Newest first, optionally only one peer's."""
        ...

    async def page(
        self, peer: str, where: TaskFilter, before: int | None, limit: int
    ) -> TaskPageRows:
        """One peer's tasks matching `where`, newest first: at most `limit`, each older than
        the cursor `before` when given (a cursor is a task's insertion order, positive)."""
        ...
