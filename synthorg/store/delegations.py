"""Delegation records: every task this node hands to a peer, and what we last saw of it (the
A2A 1.0 task, its state by 1.0's name, whatever dialect the peer speaks)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic import ValidationError

from synthorg.dialects.objects import state_v03, state_v1, task_v1_json
from synthorg.generated.constants import V1_TERMINAL_STATES
from synthorg.generated.models import Task, V1Task
from synthorg.store.task_codec import loads, loads_v03, text


@dataclass(frozen=True)
class Delegation:
    id: str  # local id
    peer: str
    remote_task_id: str
    context_id: str
    message_id: str
    state: str  # last known remote state (1.0's name: TASK_STATE_WORKING)
    origin_task_id: str | None  # the inbound task this forwards, for onward delegation
    task: V1Task  # last known remote task (artifacts included)
    created_at: str
    updated_at: str
    # The binding it was sent in (synthorg.dialects.outbound); None: JSON-RPC, as records
    # from before bindings were chosen.
    binding: str | None = None


_OLD_BYTES_KEY = "bytes_"  # the model's field name, not its alias "bytes"


def _renamed(value: Any) -> Any:
    if isinstance(value, dict):
        return {("bytes" if key == _OLD_BYTES_KEY and "bytes" not in value else key):
                _renamed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_renamed(item) for item in value]
    return value


def load_task(body: str) -> V1Task:
    """A delegation's stored task."""
    return loads(body)


def load_task_v03(body: str) -> Task:
    """A delegation's task as a release before schema 14 stored it, the 0.3 document. Earlier
    releases' push receiver stored a pushed task by field names, so a file part's bytes may
    sit under `bytes_`: such a body is read with the key put right, never lost."""
    try:
        return loads_v03(body)
    except ValidationError:
        if _OLD_BYTES_KEY not in body:
            raise
        return Task.model_validate(_renamed(json.loads(body)))


def delegation_row_v1(body: str, state: str) -> tuple[str, str] | None:
    """A delegations row's (body, state) in 1.0's form (read as a 0.3 task first, see
    `load_task_v03`); None when the row is in 1.0's form already (a 0.3 task always has a
    `kind`, a 1.0 one never)."""
    if "kind" not in json.loads(body):
        return None
    task = load_task_v03(body)
    valid = task.__pydantic_serializer__.to_python(
        task, mode="json", by_alias=True, exclude_none=True
    )
    return text(task_v1_json(valid)), state_v1(state_v03(state))


def _status_time(task: V1Task) -> datetime | None:
    stamp = task.status.timestamp
    if stamp is None:
        return None
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def supersedes(current: V1Task, new: V1Task) -> bool:
    """Whether `new` may replace `current` as what we last saw of the remote task.

    Pushes, polls and streams arrive in any order, and a push may be replayed or retried
    late; the record follows the task's own order instead: it never leaves a final state,
    and never takes a status older (by the task's status timestamp) than the one it holds.
    Without timestamps on both sides only the first rule can apply.
    """
    if current.status.state in V1_TERMINAL_STATES:
        return False
    held, offered = _status_time(current), _status_time(new)
    return held is None or offered is None or offered >= held


class DelegationStore(Protocol):
    async def add(self, record: Delegation) -> None: ...

    async def update(self, local_id: str, task: V1Task) -> Delegation:
        """Replace the record's task with `task` if it `supersedes` the one held (atomically:
        two updates racing cannot both pass the check); the record as it stands after."""
        ...

    async def get(self, local_id: str) -> Delegation | None: ...

    async def by_origin(self, origin_task_id: str) -> Delegation | None: ...

    async def by_remote(self, peer: str, remote_task_id: str) -> Delegation | None:
        """The newest delegation to `peer` whose task there is `remote_task_id` (indexed)."""
        ...

    async def recent(self, limit: int = 100) -> list[Delegation]: ...
