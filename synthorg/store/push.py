"""Push notification configs: where the owner of a task wants its changes POSTed.

A config belongs to one task and, through it, to the peer that owns the task; every read and
write names that peer, so another peer's configs are indistinguishable from missing ones.
The body is the config as JSON (A2A `PushNotificationConfig`, its id filled in).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

MAX_CONFIGS_PER_TASK = 16  # the spec's maxItems on tasks/pushNotificationConfig/list


class StoredConfig(NamedTuple):
    peer: str
    task_id: str
    config: dict[str, Any]


class PushConfigStore(Protocol):
    async def put(self, peer: str, task_id: str, config: dict[str, Any]) -> bool:
        """Insert or replace the config by `config["id"]`; False (nothing written) when the
        task already has MAX_CONFIGS_PER_TASK others."""
        ...

    async def get(self, peer: str, task_id: str, config_id: str) -> dict[str, Any] | None: ...

    async def of_task(self, peer: str, task_id: str) -> list[dict[str, Any]]:
        """The task's configs, ordered by id."""
        ...

    async def delete(self, peer: str, task_id: str, config_id: str) -> bool:
        """True when a config was removed."""
        ...

    async def for_task(self, task_id: str) -> list[StoredConfig]:
        """Every config of a task, whoever owns it (the deliverer's read)."""
        ...

    def rewrite(self, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> int:
        """Pass every config through `change` in one transaction, storing what it returns (None:
        unchanged); the number rewritten. Blocking: for operator commands (`peers rekey`)."""
        ...


class Delivery(NamedTuple):
    """One push owed to one config: the task as it was when it reached a status."""

    id: str  # X-A2A-Delivery-Id, the same across the retries of this delivery
    task_id: str
    peer: str  # who owns the task (and so the config)
    config: dict[str, Any] | None  # None: the config was deleted since
    body: str  # the Task JSON to POST
    attempts: int  # made before this one


class PushOutbox(Protocol):
    """Deliveries owed, durable: a claim holds a delivery for a lease, so a sender that dies
    leaves it due again (at least once; the delivery id tells duplicates apart)."""

    async def enqueue(
        self, task_id: str, status_key: str, version: int, body: str, now: float
    ) -> int:
        """One delivery per config of the task for this status (`status_key`, read at the
        task's `version`). Each config keeps the status it was last enqueued for and its
        version: that status is not enqueued again (so pruned deliveries are not owed again),
        nor is a status read at an older version (a read that overlapped a newer one's
        enqueue). Returns how many were added."""
        ...

    async def claim(self, now: float, lease: float, limit: int) -> list[Delivery]:
        """Due deliveries, held until now + lease."""
        ...

    async def delivered(self, delivery_id: str) -> None: ...

    async def delivered_many(self, delivery_ids: Sequence[str]) -> None:
        """`delivered` for each, in one write."""
        ...

    async def retry(self, delivery_id: str, next_at: float, error: str) -> None: ...

    async def failed(self, delivery_id: str, error: str) -> None:
        """Given up: no more attempts."""
        ...

    async def owners(self) -> list[tuple[str, str]]:
        """(peer, task id) of every task with a config: what a sweep re-checks."""
        ...

    async def state(self, delivery_id: str) -> tuple[str | None, int] | None:
        """(outcome: None pending, 'delivered' or 'failed'; attempts), None if unknown."""
        ...

    async def prune(self, before: float, limit: int) -> int:
        """Delete at most `limit` finished deliveries (delivered or given up) whose last claim
        ran out before `before`; returns how many."""
        ...

    async def pending(self) -> int:
        """How many deliveries are owed (not yet delivered nor given up)."""
        ...

    async def release(self, now: float, lease: float) -> int:
        """Owed deliveries due within `lease` (those a claim holds, and retries about due)
        made due now: for the start of a store's only server, when every claim is a dead
        sender's. Returns how many."""
        ...


class PushReceipts(Protocol):
    """The delivery ids of verified pushes, per peer: what makes a replay detectable."""

    async def first(
        self, peer: str, delivery_id: str, now: float, keep_after: float | None
    ) -> bool:
        """Record the delivery id; False when the peer's id was already recorded. A receipt
        from before `keep_after` is forgotten (None: keep every receipt)."""
        ...

    async def prune(self, before: float, limit: int) -> int:
        """Delete at most `limit` receipts recorded before `before`; returns how many."""
        ...
