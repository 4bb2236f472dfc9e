"""The context a handler is called with: the runtime's side of `handlers.context.RpcContext`."""

from __future__ import annotations

from dataclasses import dataclass

from handlers.context import RequestId, SkillOperations, TaskOperations


@dataclass(frozen=True, slots=True)
class Services:
    """The node's services a handler may reach, built once at start-up."""

    tasks: TaskOperations
    skills: SkillOperations


@dataclass(frozen=True, slots=True)
class CallContext:
    """One admitted call."""

    peer: str
    request_id: RequestId
    agent_id: str | None
    tasks: TaskOperations
    skills: SkillOperations
