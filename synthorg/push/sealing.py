"""Push config secrets sealed at rest: a config's `token` and its `authentication.credentials`
are kept encrypted with the node's secret box (as peer link secrets are) and opened only to
answer their owner or to send a push. `peers rekey` seals them again with the newest key
(values stored before sealing existed are sealed then)."""

from __future__ import annotations

from collections.abc import Callable
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

    def _resealed(self, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if value.startswith(PREFIX):  # the plaintext never leaves the box
            return PREFIX + self._box.rotate(value[len(PREFIX):].encode("ascii")).decode("ascii")
        return PREFIX + self._box.encrypt(value).decode("ascii")

    def reseal(self, config: dict[str, Any]) -> dict[str, Any] | None:
        """The config with its secrets sealed with the newest key; None when it has none."""
        resealed = dict(config)
        changed = False
        if isinstance(resealed.get("token"), str):
            resealed["token"] = self._resealed(resealed["token"])
            changed = True
        auth = resealed.get("authentication")
        if isinstance(auth, dict) and isinstance(auth.get("credentials"), str):
            resealed["authentication"] = {**auth,
                                          "credentials": self._resealed(auth["credentials"])}
            changed = True
        return resealed if changed else None

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

    def rekey(self) -> int:
        """Seal every config's secrets again with the newest key; how many configs."""
        return self._inner.rewrite(self._sealer.reseal)

    def rewrite(self, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> int:
        def sealed_change(stored: dict[str, Any]) -> dict[str, Any] | None:
            changed = change(self._sealer.open(stored))
            return None if changed is None else self._sealer.seal(changed)

        return self._inner.rewrite(sealed_change)

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
