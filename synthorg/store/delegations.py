"""Delegation records: every task this node hands to a peer, and what we last saw of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Delegation:
    id: str  # local id
    peer: str
    remote_task_id: str
    context_id: str
    message_id: str
    state: str  # last known remote state
    origin_task_id: str | None  # the inbound task this forwards, for onward delegation
    task: dict[str, Any]  # last known remote Task JSON (artifacts included)
    created_at: str
    updated_at: str


class DelegationStore(Protocol):
    async def add(self, record: Delegation) -> None: ...

    async def update(self, local_id: str, task: dict[str, Any]) -> Delegation: ...

    async def get(self, local_id: str) -> Delegation | None: ...

    async def by_origin(self, origin_task_id: str) -> Delegation | None: ...

    async def by_remote(self, peer: str, remote_task_id: str) -> Delegation | None:
        """The newest delegation to `peer` whose task there is `remote_task_id` (indexed)."""
        ...

    async def recent(self, limit: int = 100) -> list[Delegation]: ...
