"""skills/query and skills/negotiate, answered from local agents and peers' cards.

Local agents are matched on the company YAML; peers on the cards discovery holds (fetched or
revalidated as needed, concurrently, never past the client timeout). A match is by skill id or
by tag, case-insensitively.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from synthorg.cards.discovery import PeerCardStatus
from synthorg.errors import PeerUnavailable, UnknownPeer
from synthorg.generated.models import AgentConfig, SkillsNegotiateResult, SkillsQueryResult


class PeerCards(Protocol):
    """The read side of `synthorg.cards.discovery.CardDiscovery`."""

    async def lookup(self, name: str) -> PeerCardStatus | None: ...

    async def lookup_all(self) -> list[PeerCardStatus]: ...


def skill_matches(skill_id: str, tags: Iterable[str] | None, wanted: str) -> bool:
    """`wanted` must already be case-folded."""
    return skill_id.casefold() == wanted or any(t.casefold() == wanted for t in tags or ())


class SkillDirectory:
    def __init__(self, agents: Sequence[AgentConfig], peer_cards: PeerCards) -> None:
        self._agents = agents
        self._peer_cards = peer_cards

    async def query(self, skill: str) -> SkillsQueryResult:
        """The local agent ids and catalog peer names offering `skill`, each sorted."""
        wanted = skill.casefold()
        agents = sorted(
            agent.id for agent in self._agents
            if any(skill_matches(s.id, s.tags, wanted) for s in agent.skills or [])
        )
        peers = sorted(
            status.peer for status in await self._peer_cards.lookup_all()
            if status.card is not None
            and any(skill_matches(s.id, s.tags, wanted) for s in status.card.skills)
        )
        return SkillsQueryResult(skill=skill, agents=agents, peers=peers)

    async def negotiate(self, skill: str, peer_name: str) -> SkillsNegotiateResult:
        status = await self._peer_cards.lookup(peer_name)
        if status is None:
            raise UnknownPeer()
        card = status.card
        if card is None:
            raise PeerUnavailable(reason=status.reason or "unknown")
        wanted = skill.casefold()
        matched = sorted({s.id for s in card.skills if skill_matches(s.id, s.tags, wanted)})
        return SkillsNegotiateResult(
            skill=skill,
            peerName=status.peer,
            accepted=bool(matched),
            url=card.url,
            matchedSkills=matched,
        )
