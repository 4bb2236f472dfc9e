"""Push notification configs: where the owner of a task wants its changes POSTed.

A config belongs to one task and, through it, to the peer that owns the task; every read and
write names that peer, so another peer's configs are indistinguishable from missing ones.
The body is the config as JSON (A2A `PushNotificationConfig`, its id filled in).
"""

from __future__ import annotations

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
