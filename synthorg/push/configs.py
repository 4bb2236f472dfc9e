"""The push notification configs of a caller's tasks (tasks/pushNotificationConfig/*).

Every operation first reads the task as the caller: another peer's task is not found, so its
configs cannot be seen, changed or probed. A URL is checked (and its host resolved) when it
is set, so a caller learns at once that a target is refused (for the caller as the task's
owner: only its own receiver is a federation push, see `push.ssrf`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from synthorg.errors import InvalidParams, TaskNotFound
from synthorg.generated.models import PushNotificationConfig, TaskPushNotificationConfig
from synthorg.push.ssrf import TargetGuard, TargetRefused, Unresolved
from synthorg.store.push import MAX_CONFIGS_PER_TASK, PushConfigStore
from synthorg.store.tasks import TaskStore

SCHEMES = frozenset({"bearer", "basic"})  # the Authorization schemes the deliverer sends


def _check_authentication(config: PushNotificationConfig) -> None:
    auth = config.authentication
    if auth is None:
        return
    if not any(scheme.lower() in SCHEMES for scheme in auth.schemes):
        raise InvalidParams("Invalid params: authentication.schemes must include Bearer or Basic")
    if not auth.credentials:
        raise InvalidParams("Invalid params: authentication needs credentials")


class PushConfigs:
    def __init__(
        self,
        tasks: TaskStore,
        store: PushConfigStore,
        guard: TargetGuard,
        on_set: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._tasks = tasks
        self._store = store
        self._guard = guard
        self._on_set = on_set  # the deliverer: a new config may have a state to push now

    async def _owned(self, peer: str, task_id: str) -> None:
        if await self._tasks.get(peer, task_id) is None:
            raise TaskNotFound()

    async def check(self, peer: str, config: PushNotificationConfig) -> None:
        """InvalidParams unless the node would push to this config of a task `peer` owns."""
        _check_authentication(config)
        try:
            await self._guard.check(config.url, peer)
        except Unresolved:
            # Not refused for a name that does not resolve yet (or a resolver's bad moment):
            # each delivery resolves the host again and is refused then if it must be.
            pass
        except TargetRefused as refused:
            raise InvalidParams(f"Invalid params: {refused}") from None

    async def set(
        self, peer: str, task_id: str, config: PushNotificationConfig
    ) -> TaskPushNotificationConfig:
        await self._owned(peer, task_id)
        await self.check(peer, config)
        stored = config.model_copy(update={"id": config.id or task_id})
        body: dict[str, Any] = stored.model_dump(mode="json", exclude_none=True)
        if not await self._store.put(peer, task_id, body):
            raise InvalidParams(
                f"Invalid params: a task has at most {MAX_CONFIGS_PER_TASK} push configs"
            )
        if self._on_set is not None:
            await self._on_set(task_id)
        return TaskPushNotificationConfig(taskId=task_id, pushNotificationConfig=stored)

    async def get(
        self, peer: str, task_id: str, config_id: str | None
    ) -> TaskPushNotificationConfig:
        await self._owned(peer, task_id)
        body = await self._store.get(peer, task_id, config_id or task_id)
        if body is None:
            raise InvalidParams("Invalid params: the task has no push config by that id")
        return _view(task_id, body)

    async def list(self, peer: str, task_id: str) -> list[TaskPushNotificationConfig]:
        await self._owned(peer, task_id)
        return [_view(task_id, body) for body in await self._store.of_task(peer, task_id)]

    async def delete(self, peer: str, task_id: str, config_id: str) -> None:
        """Idempotent: a config already gone is not an error."""
        await self._owned(peer, task_id)
        await self._store.delete(peer, task_id, config_id)


def _view(task_id: str, body: dict[str, Any]) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(
        taskId=task_id, pushNotificationConfig=PushNotificationConfig.model_validate(body)
    )
