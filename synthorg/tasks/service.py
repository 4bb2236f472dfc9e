"""Task lifecycle for inbound calls: create, continue, read and cancel, per calling peer.

Ownership is enforced by the store (every read is keyed on the peer), so another peer's task
is indistinguishable from a missing one. `(peer, messageId)` is the idempotency key: a retry
returns the same task, a reuse with different content is refused.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from weakref import WeakValueDictionary

from synthorg.delegation.peer_executor import MAX_HOPS, visited_nodes
from synthorg.gateway.errors import (
    DELEGATION_LOOP,
    INVALID_PARAMS,
    MESSAGE_ID_CONFLICT,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    TASK_TERMINAL,
    UNKNOWN_AGENT,
    RpcError,
)
from synthorg.generated.models import MessageSendParams
from synthorg.observability.events import a2a as events
from synthorg.observability.log import emit
from synthorg.store.tasks import TaskStore
from synthorg.tasks.executors import Executor, Outcome
from synthorg.tasks.states import TERMINAL


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def message_digest(message: dict[str, Any]) -> str:
    canonical = json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class AgentRuntime:
    agent_id: str
    executor: Executor


class TaskService:
    def __init__(
        self,
        store: TaskStore,
        agents: Mapping[str, AgentRuntime],
        default_agent: str,
        max_message_parts: Callable[[], int],
        node_name: str | None = None,
    ) -> None:
        self._node_name = node_name
        self._store = store
        self._agents = agents
        self._default_agent = default_agent
        self._max_parts = max_message_parts
        # One operation at a time per task within this process, so concurrent follow-ups
        # and cancels never overwrite each other's history (the store keeps terminal states
        # final across processes too).
        self._task_locks: WeakValueDictionary[str, asyncio.Lock] = WeakValueDictionary()

    async def send(
        self, peer: str, params: MessageSendParams, agent_id: str | None = None
    ) -> dict[str, Any]:
        message = params.message.model_dump(mode="json", by_alias=True, exclude_none=True)
        limit = self._max_parts()
        if len(message["parts"]) > limit:
            raise RpcError(
                INVALID_PARAMS,
                f"Invalid params: the message has {len(message['parts'])} parts; "
                f"at most {limit} are accepted",
                {"limit": limit},
            )
        if message["role"] != "user":
            raise RpcError(INVALID_PARAMS, 'Invalid params: an inbound message has role "user"')
        self._check_hops(peer, message)
        digest = message_digest(message)
        if "taskId" in message:
            async with self._lock(message["taskId"]):
                return await self._continue(peer, message, digest)
        return await self._create(peer, message, digest, self._agent(message, agent_id))

    async def get(self, peer: str, task_id: str, history_length: int | None) -> dict[str, Any]:
        task = await self._owned(peer, task_id, "tasks/get")
        if history_length is not None:
            history = task.get("history", [])
            task = {**task, "history": history[-history_length:] if history_length else []}
        return task

    def _lock(self, task_id: str) -> asyncio.Lock:
        lock = self._task_locks.get(task_id)
        if lock is None:
            lock = self._task_locks[task_id] = asyncio.Lock()
        return lock

    async def cancel(self, peer: str, task_id: str) -> dict[str, Any]:
        async with self._lock(task_id):
            return await self._cancel(peer, task_id)

    async def _cancel(self, peer: str, task_id: str) -> dict[str, Any]:
        task = await self._owned(peer, task_id, "tasks/cancel")
        if task["status"]["state"] in TERMINAL:
            self._rejected("tasks/cancel", peer, task_id, "not_cancelable")
            raise RpcError(TASK_NOT_CANCELABLE, "Task cannot be canceled: it is already final")
        try:
            await self._runtime(task).executor.cancel(task)
        except Exception as exc:  # e.g. the downstream peer is down: cancel here regardless
            emit(
                events.TASK_EXECUTOR_FAILED,
                level="warning",
                peer_name=peer,
                task_id=task_id,
                reason="downstream_cancel_failed",
                error=type(exc).__name__,
            )
        return await self._settle(peer, task, Outcome("canceled"))

    # internals

    def _check_hops(self, peer: str, message: dict[str, Any]) -> None:
        visited = visited_nodes(message)
        if (self._node_name and self._node_name in visited) or len(visited) >= MAX_HOPS:
            self._rejected("message/send", peer, message.get("taskId", ""), "delegation_loop")
            raise RpcError(
                DELEGATION_LOOP,
                f"Delegation loop: this task already passed through {' -> '.join(visited)}"
                if self._node_name in visited
                else f"Delegation hop limit of {MAX_HOPS} reached",
            )

    def _agent(self, message: dict[str, Any], explicit: str | None) -> AgentRuntime:
        requested = explicit or (message.get("metadata") or {}).get("agentId")
        agent_id = requested if isinstance(requested, str) else self._default_agent
        runtime = self._agents.get(agent_id)
        if runtime is None:
            raise RpcError(UNKNOWN_AGENT, "Unknown agent")
        return runtime

    def _runtime(self, task: dict[str, Any]) -> AgentRuntime:
        agent_id = task.get("metadata", {}).get("agentId", self._default_agent)
        return self._agents.get(agent_id) or self._agents[self._default_agent]

    async def _owned(self, peer: str, task_id: str, method: str) -> dict[str, Any]:
        task = await self._store.get(peer, task_id)
        if task is None:
            self._rejected(method, peer, task_id, "not_found")
            raise RpcError(TASK_NOT_FOUND, "Task not found")
        return task

    def _rejected(self, method: str, peer: str, task_id: str, reason: str) -> None:
        emit(
            events.TASK_METHOD_REJECTED,
            method=method,
            peer_name=peer,
            task_id=task_id,
            reason=reason,
        )

    async def _create(
        self, peer: str, message: dict[str, Any], digest: str, agent: AgentRuntime
    ) -> dict[str, Any]:
        task_id = str(uuid.uuid4())
        context_id = message.get("contextId") or str(uuid.uuid4())
        stored_message = {**message, "taskId": task_id, "contextId": context_id}
        task = {
            "kind": "task",
            "id": task_id,
            "contextId": context_id,
            "status": {"state": "submitted", "timestamp": now_iso()},
            "history": [stored_message],
            "artifacts": [],
            "metadata": {"agentId": agent.agent_id},
        }
        existing, existing_digest = await self._store.create(
            peer, message["messageId"], digest, task
        )
        if existing["id"] != task_id:
            return self._replay(existing, existing_digest, digest)
        emit(events.TASK_CREATED, peer_name=peer, task_id=task_id, agent_id=agent.agent_id)
        return await self._run(peer, task, stored_message, agent)

    async def _continue(self, peer: str, message: dict[str, Any], digest: str) -> dict[str, Any]:
        task_id = message["taskId"]
        key = await self._store.get_message_key(peer, message["messageId"])
        if key is not None:
            return self._replay(await self._owned(peer, key[0], "message/send"), key[1], digest)
        task = await self._owned(peer, task_id, "message/send")
        if task["status"]["state"] in TERMINAL:
            self._rejected("message/send", peer, task_id, "terminal")
            raise RpcError(TASK_TERMINAL, "Task is in a terminal state and cannot continue")
        if message.get("contextId", task["contextId"]) != task["contextId"]:
            raise RpcError(INVALID_PARAMS, "Invalid params: contextId does not match the task")
        claimed = await self._store.claim_message(peer, message["messageId"], digest, task_id)
        if claimed is not None:  # a concurrent retry recorded the key first
            return self._replay(
                await self._owned(peer, claimed[0], "message/send"), claimed[1], digest
            )
        stored_message = {**message, "contextId": task["contextId"]}
        task = {**task, "history": [*task.get("history", []), stored_message]}
        return await self._run(peer, task, stored_message, self._runtime(task))

    def _replay(self, task: dict[str, Any], stored: str, digest: str) -> dict[str, Any]:
        if stored != digest:
            raise RpcError(MESSAGE_ID_CONFLICT, "messageId was already used with different content")
        return task

    async def _run(
        self, peer: str, task: dict[str, Any], message: dict[str, Any], agent: AgentRuntime
    ) -> dict[str, Any]:
        task = {**task, "status": {"state": "working", "timestamp": now_iso()}}
        try:
            outcome = await agent.executor.run(task, message)
        except Exception as exc:
            emit(
                events.TASK_EXECUTOR_FAILED,
                level="error",
                peer_name=peer,
                task_id=task["id"],
                error=type(exc).__name__,
            )
            outcome = Outcome("failed", message_text="the agent failed to run this task")
        return await self._settle(peer, task, outcome)

    async def _settle(self, peer: str, task: dict[str, Any], outcome: Outcome) -> dict[str, Any]:
        status: dict[str, Any] = {"state": outcome.state, "timestamp": now_iso()}
        history = list(task.get("history", []))
        if outcome.message_text is not None:
            agent_message = {
                "kind": "message",
                "messageId": str(uuid.uuid4()),
                "role": "agent",
                "parts": [{"kind": "text", "text": outcome.message_text}],
                "taskId": task["id"],
                "contextId": task["contextId"],
            }
            status["message"] = agent_message
            history.append(agent_message)
        updated = {
            **task,
            "status": status,
            "history": history,
            "artifacts": [*task.get("artifacts", []), *outcome.artifacts],
        }
        stored: dict[str, Any] = await self._store.save(peer, updated)
        emit(
            events.TASK_STATE_CHANGED,
            peer_name=peer,
            task_id=task["id"],
            state=stored["status"]["state"],
        )
        return stored
