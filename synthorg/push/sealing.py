"""Push config secrets sealed at rest: a config's `token` and its `authentication.credentials`
are kept encrypted with the node's secret box (as peer link secrets are) and opened only to
answer their owner or to send a push."""

from __future__ import annotations

from typing import Any

from synthorg.store.push import PushConfigStore, StoredConfig
from synthorg.store.secretbox import SecretBox

PREFIX = "sealed:"  # a sealed value; a caller's own value never needs to start like this


def _open(box: SecretBox, value: Any) -> Any:
    if isinstance(value, str) and value.startswith(PREFIX):
        return box.decrypt(value[len(PREFIX):].encode("ascii"))
    return value  # written before sealing existed


class Sealer:
    def __init__(self, box: SecretBox) -> None:
        self._box = box

    def seal(self, config: dict[str, Any]) -> dict[str, Any]:
        sealed = dict(config)
        if isinstance(sealed.get("token"), str):
            sealed["token"] = PREFIX + self._box.encrypt(sealed["token"]).decode("ascii")
        auth = sealed.get("authentication")
        if isinstance(auth, dict) and isinstance(auth.get("credentials"), str):
            token = self._box.encrypt(auth["credentials"]).decode("ascii")
            sealed["authentication"] = {**auth, "credentials": PREFIX + token}
        return sealed

    def open(self, config: dict[str, Any]) -> dict[str, Any]:
        opened = dict(config)
        if "token" in opened:
            opened["token"] = _open(self._box, opened["token"])
        auth = opened.get("authentication")
        if isinstance(auth, dict) and "credentials" in auth:
            credentials = _open(self._box, auth["credentials"])
            opened["authentication"] = {**auth, "credentials": credentials}
        return opened


class SealedConfigs:
    """A PushConfigStore whose rows hold the secrets sealed; its callers see them open."""

    def __init__(self, inner: PushConfigStore, sealer: Sealer) -> None:
        self._inner, self._sealer = inner, sealer

    async def put(self, peer: str, task_id: str, config: dict[str, Any]) -> bool:
        return await self._inner.put(peer, task_id, self._sealer.seal(config))

    async def get(self, peer: str, task_id: str, config_id: str) -> dict[str, Any] | None:
        found = await self._inner.get(peer, task_id, config_id)
        return None if found is None else self._sealer.open(found)

    async def of_task(self, peer: str, task_id: str) -> list[dict[str, Any]]:
        return [self._sealer.open(c) for c in await self._inner.of_task(peer, task_id)]

    async def delete(self, peer: str, task_id: str, config_id: str) -> bool:
        return await self._inner.delete(peer, task_id, config_id)

    async def for_task(self, task_id: str) -> list[StoredConfig]:
        return [
            StoredConfig(s.peer, s.task_id, self._sealer.open(s.config))
            for s in await self._inner.for_task(task_id)
        ]
