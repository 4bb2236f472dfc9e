"""Onward delegation: an agent of this node forwards its tasks to a catalog peer (A -> B -> C).

Loops are stopped with visited-nodes metadata: each forwarding node appends its own name to
`message.metadata["synthorg.visited"]`. A node that finds its own name there, or a list already
`MAX_HOPS` long, refuses the message with -32030 (see TaskService.send), so A -> B -> A ends in
a clear error on the first hop back instead of recursing.
"""

from __future__ import annotations

from typing import Any

from synthorg.delegation.client import PeerError, PeerRpcError
from synthorg.delegation.delegator import DelegationError, Delegator
from synthorg.gateway.errors import TASK_NOT_CANCELABLE
from synthorg.tasks.executors import Outcome

VISITED_KEY = "synthorg.visited"
MAX_HOPS = 8


def visited_nodes(message: dict[str, Any]) -> list[str]:
    visited = (message.get("metadata") or {}).get(VISITED_KEY, [])
    return [v for v in visited if isinstance(v, str)] if isinstance(visited, list) else []


def _status_text(task: dict[str, Any]) -> str | None:
    message = task.get("status", {}).get("message")
    if not message:
        return None
    texts = [p["text"] for p in message.get("parts", []) if p.get("kind") == "text"]
    return "\n".join(texts) or None


class PeerExecutor:
    def __init__(
        self, delegator: Delegator, node_name: str | None, peer: str, agent_id: str | None
    ) -> None:
        self._delegator = delegator
        self._node_name = node_name
        self._peer = peer
        self._agent_id = agent_id

    async def run(self, task: dict[str, Any], message: dict[str, Any]) -> Outcome:
        metadata = {VISITED_KEY: [*visited_nodes(message), self._node_name or "?"]}
        parts = message["parts"]
        try:
            existing = await self._delegator.store.by_origin(task["id"])
            if existing is None:
                record = await self._delegator.delegate(
                    self._peer,
                    parts,
                    agent_id=self._agent_id,
                    metadata=metadata,
                    origin_task_id=task["id"],
                )
            else:
                record = await self._delegator.send_followup(existing, parts, metadata)
        except PeerRpcError as exc:
            return Outcome("failed", message_text=f"peer {self._peer} refused: {exc.message}")
        except (PeerError, DelegationError) as exc:
            return Outcome("failed", message_text=f"peer {self._peer} failed: {exc}")
        remote = record.task
        known = {a.get("artifactId") for a in task.get("artifacts", [])}
        fresh = [a for a in remote.get("artifacts", []) if a.get("artifactId") not in known]
        return Outcome(record.state, message_text=_status_text(remote), artifacts=fresh)

    async def cancel(self, task: dict[str, Any]) -> None:
        record = await self._delegator.store.by_origin(task["id"])
        if record is None:
            return
        try:
            await self._delegator.cancel(record.id)
        except PeerRpcError as exc:
            if exc.code != TASK_NOT_CANCELABLE:
                raise
