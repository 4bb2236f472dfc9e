"""The context a handler is called with: the runtime's side of `handlers.context.RpcContext`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from handlers.context import PushConfigOperations, RequestId, SkillOperations, TaskOperations
from synthorg.errors import InvalidParams
from synthorg.generated.models import AgentCard, V1AgentCard


class ExtendedCards(Protocol):
    """The extended cards (`synthorg/cards/publisher.py`), for the request's local address."""

    def extended(self, agent_id: str | None, scope: Mapping[str, Any]) -> AgentCard: ...

    def extended_v1(self, agent_id: str | None, scope: Mapping[str, Any]) -> V1AgentCard: ...


@dataclass(frozen=True, slots=True)
class Services:
    """The node's services a handler may reach, built once at start-up."""

    tasks: TaskOperations
    skills: SkillOperations
    push: PushConfigOperations
    cards: ExtendedCards | None = None


class CallContext(NamedTuple):
    """One admitted call (a tuple: made on every request, it must be cheap)."""

    peer: str
    request_id: RequestId
    agent_id: str | None
    tasks: TaskOperations
    skills: SkillOperations
    push: PushConfigOperations
    last_event_id: str | None = None  # the header, for a call that resumes a stream
    cards: ExtendedCards | None = None
    scope: Mapping[str, Any] | None = None  # the ASGI scope: which local address took it

    def extended_card(self) -> AgentCard:
        if self.cards is None or self.scope is None:
            raise InvalidParams("Invalid params: this endpoint serves no extended card")
        return self.cards.extended(self.agent_id, self.scope)

    def extended_card_v1(self) -> V1AgentCard:
        if self.cards is None or self.scope is None:
            raise InvalidParams("Invalid params: this endpoint serves no extended card")
        return self.cards.extended_v1(self.agent_id, self.scope)
