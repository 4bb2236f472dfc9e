"""The admin API's side of the node: `handlers.context.AdminContext`, over the admin service.

Answers are the spec's admin.json documents (SettingView, AdminPeer, AdminStatus); every
change is made and audited by the same service the CLI uses, with `via=AUDIT_VIA_ADMIN_API` and the
operator's client address.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from synthorg.admin.activity import ActivityView
from synthorg.admin.audit import audit_list
from synthorg.admin.service import AdminService, peer_json, setting_json
from synthorg.admin.status import NodeStatus
from synthorg.admin.task_query import TaskListQuery
from synthorg.admin.tasks import AdminTasks
from synthorg.cards.discovery import CardDiscovery
from synthorg.generated.constants import AUDIT_VIA_ADMIN_API, CARD_STATUS_UNKNOWN
from synthorg.generated.models import StreamEvent
from synthorg.sequenced import Sequenced
from synthorg.settings.runtime import RuntimeSettings, setting_definition
from synthorg.store.audit import AuditStore


class AdminApi:
    def __init__(
        self,
        service: AdminService,
        settings: RuntimeSettings,
        discovery: CardDiscovery,
        a2a_enabled: bool,
        activity: ActivityView,
        node_status: NodeStatus,
        tasks: AdminTasks,
        audit: AuditStore,
    ) -> None:
        self._audit = audit
        self._service = service
        self._activity = activity
        self._node_status = node_status
        self._tasks = tasks
        self._settings = settings
        self._discovery = discovery
        self._enabled = a2a_enabled

    def list_settings(self) -> list[dict[str, Any]]:
        return [setting_json(view) for view in self._service.settings.list()]

    def get_setting(self, name: str) -> dict[str, Any]:
        return setting_json(self._service.settings.get(name))

    def require_setting(self, name: str) -> str:
        return setting_definition(name).describe_range()

    def set_setting(self, name: str, value: float | int, client: str | None) -> dict[str, Any]:
        change = self._service.settings.set(name, value, via=AUDIT_VIA_ADMIN_API, client=client)
        return setting_json(change.after)

    def reset_setting(self, name: str, client: str | None) -> dict[str, Any]:
        change = self._service.settings.reset(name, via=AUDIT_VIA_ADMIN_API, client=client)
        return setting_json(change.after)

    def list_peers(self) -> list[dict[str, Any]]:
        return [self._with_card(peer_json(record)) for record in self._service.peers.list()]

    def get_peer(self, name: str) -> dict[str, Any]:
        return self._with_card(peer_json(self._service.peers.get(name)))

    def _with_card(self, peer: dict[str, Any]) -> dict[str, Any]:
        """What discovery last learned of the peer's card (never fetched for this answer):
        a refused card says why."""
        status = self._discovery.cached(peer["name"])
        if status is None:
            return {**peer, "card": {"status": CARD_STATUS_UNKNOWN, "verified": False}}
        shown = status.to_json()
        card = {"status": shown["status"], "verified": status.verified}
        if status.reason is not None:
            card["reason"] = status.reason
        if status.detail:
            card["detail"] = status.detail
        return {**peer, "card": card}

    def require_peer(self, name: str) -> None:
        self._service.peers.require(name)

    def create_peer(
        self, name: str, endpoint: str, scheme: str, secret: str, client: str | None
    ) -> dict[str, Any]:
        record = self._service.peers.create(name, endpoint, scheme, secret, via=AUDIT_VIA_ADMIN_API,
                                            client=client)
        return self._with_card(peer_json(record))

    def replace_peer(
        self, name: str, endpoint: str, scheme: str, secret: str, client: str | None
    ) -> dict[str, Any]:
        record = self._service.peers.replace(name, endpoint, scheme, secret,
                                             via=AUDIT_VIA_ADMIN_API, client=client)
        return self._with_card(peer_json(record))

    def set_peer_rate_limit(self, name: str, per_second: float | None, client: str | None
                            ) -> dict[str, Any]:
        record = self._service.peers.set_rate_limit(name, per_second, via=AUDIT_VIA_ADMIN_API,
                                                    client=client)
        return self._with_card(peer_json(record))

    def set_peer_card_key(self, name: str, card_key: str | None, client: str | None
                          ) -> dict[str, Any]:
        record = self._service.peers.set_card_key(name, card_key, via=AUDIT_VIA_ADMIN_API,
                                                  client=client)
        return self._with_card(peer_json(record))

    def set_peer_binding(self, name: str, binding: str | None, client: str | None
                         ) -> dict[str, Any]:
        record = self._service.peers.set_binding(name, binding, via=AUDIT_VIA_ADMIN_API,
                                                 client=client)
        return self._with_card(peer_json(record))

    def delete_peer(self, name: str, client: str | None) -> None:
        self._service.peers.delete(name, via=AUDIT_VIA_ADMIN_API, client=client)

    async def list_tasks(self, query: TaskListQuery) -> dict[str, Any]:
        return await self._tasks.list(query)

    async def get_task(self, task_id: str, peer: str | None) -> dict[str, Any]:
        return await self._tasks.detail(task_id, peer)

    async def cancel_task(self, task_id: str, peer: str | None) -> dict[str, Any]:
        return await self._tasks.cancel(task_id, peer)

    async def follow_task(self, task_id: str, peer: str | None
                          ) -> AsyncIterator[Sequenced[StreamEvent]]:
        return await self._tasks.follow(task_id, peer)

    def list_audit(self, event: str | None, via: str | None, peer: str | None,
                   key: str | None, since: str | None, limit: int) -> dict[str, Any]:
        return audit_list(self._audit, event=event, via=via, peer=peer, key=key, since=since,
                          limit=limit)

    async def peer_activity(self, name: str) -> dict[str, Any]:
        return await self._activity.peer(name)

    def metrics_samples(self) -> dict[str, Any]:
        return self._activity.samples()

    async def status(self) -> dict[str, Any]:
        # Reading the setting picks up a write made by another process (the CLI, a replica)
        # and resizes the cache through the settings listener; the resize here covers the rest.
        bound = self._settings.card_cache_max_entries
        cache = self._discovery.cache
        if cache.max_entries != bound:
            self._discovery.resize(bound)
        return {
            **await self._node_status.document(),
            "a2aEnabled": self._enabled,
            "cardCacheEntries": len(cache),
            "cardCacheMaxEntries": cache.max_entries,
        }
