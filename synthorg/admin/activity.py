"""What the admin API shows of traffic and tasks: a peer's activity, the traffic samples, and
the summaries of tasks both ways (spec/schemas/admin.json: PeerActivity, MetricsSamples,
AdminTaskSummary, AdminDelegationSummary)."""

from __future__ import annotations

from typing import Any

from synthorg.admin.service import AdminService, peer_json
from synthorg.cards.discovery import CardDiscovery, PeerCardStatus
from synthorg.dialects.objects import state_v03
from synthorg.generated.constants import (
    CARD_SIGNATURE_NOT_VERIFIED,
    CARD_SIGNATURE_REFUSED,
    CARD_SIGNATURE_VERIFIED,
    CARD_STATUS_OK,
    CARD_STATUS_UNREACHABLE,
)
from synthorg.generated.models import V1Task
from synthorg.observability.activity import Activity
from synthorg.store.delegations import Delegation, DelegationStore
from synthorg.store.tasks import TaskFilter, TaskStore

LATEST = 20  # tasks each way on a peer's page
DELEGATIONS_SCANNED = 500  # the newest delegation records a peer's are picked from


def task_summary(peer: str, task: V1Task) -> dict[str, Any]:
    agent = (task.metadata or {}).get("agentId")
    return {
        "id": task.id,
        "peer": peer,
        "agent": agent if isinstance(agent, str) else None,
        "state": state_v03(task.status.state),  # the admin API names 0.3's states
        "contextId": task.contextId,
        "updatedAt": task.status.timestamp,
    }


def delegation_summary(record: Delegation) -> dict[str, Any]:
    return {
        "id": record.id,
        "peer": record.peer,
        "remoteTaskId": record.remote_task_id,
        "state": state_v03(record.state),  # the admin API names 0.3's states
        "originTaskId": record.origin_task_id,
        "updatedAt": record.updated_at,
    }


def card_view(status: PeerCardStatus | None) -> dict[str, Any]:
    card = None if status is None or status.card is None else status.card.model_dump(
        mode="json", exclude_none=True)
    return {
        "status": CARD_STATUS_OK if card is not None else CARD_STATUS_UNREACHABLE,
        "reason": None if status is None else status.reason,
        "detail": (status.detail or None) if status is not None else None,
        "card": card,
        "signature": _signature(status),
    }


def _signature(status: PeerCardStatus | None) -> str:
    if status is not None and status.verified:
        return CARD_SIGNATURE_VERIFIED
    if status is not None and status.reason == "card_refused":
        return CARD_SIGNATURE_REFUSED
    return CARD_SIGNATURE_NOT_VERIFIED


class ActivityView:
    def __init__(self, service: AdminService, discovery: CardDiscovery, activity: Activity,
                 tasks: TaskStore, delegations: DelegationStore) -> None:
        self._service = service
        self._discovery = discovery
        self._activity = activity
        self._tasks = tasks
        self._delegations = delegations

    def samples(self) -> dict[str, Any]:
        return self._activity.samples()

    async def peer(self, name: str) -> dict[str, Any]:
        record = self._service.peers.get(name)  # UnknownPeer
        status = await self._discovery.lookup(record.name)
        last_contact, refusals = self._activity.peer(record.name)
        rows = await self._tasks.page(record.name, TaskFilter(), None, LATEST)
        recent = await self._delegations.recent(DELEGATIONS_SCANNED)
        return {
            "peer": peer_json(record),
            "card": card_view(status),
            "lastContact": last_contact,
            "refusals": refusals,
            "tasksIn": [task_summary(record.name, task) for _, task in rows.rows],
            "delegationsOut": [delegation_summary(d) for d in recent
                               if d.peer == record.name][:LATEST],
        }
