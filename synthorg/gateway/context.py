"""The context a handler is called with: the runtime's side of `handlers.context.RpcContext`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from handlers.context import PushConfigOperations, RequestId, SkillOperations, TaskOperations


@dataclass(frozen=True, slots=True)
class Services:
    """The node's services a handler may reach, built once at start-up."""

    tasks: TaskOperations
    skills: SkillOperations
    push: PushConfigOperations


class CallContext(NamedTuple):
    """One admitted call (a tuple: made on every request, it must be cheap)."""

    peer: str
    request_id: RequestId
    agent_id: str | None
    tasks: TaskOperations
    skills: SkillOperations
    push: PushConfigOperations
    last_event_id: str | None = None  # the header, for a call that resumes a stream
