"""skills/query and skills/negotiate, answered from local agents and peers' cards.

Local agents are matched on the company YAML; peers on the cards discovery holds (fetched or
revalidated as needed, concurrently, never past the client timeout). A match is by skill id or
by tag, case-insensitively.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from synthorg.cards.discovery import PeerCardStatus
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
        """Whether `peer_name`'s card offers `skill`, and where to send the task if so.

        A refusal does not say why: a name not in the catalog, a peer whose card cannot be
        read and a peer that does not offer the skill get the same answer (not accepted, no
        url, the name as asked), so a caller cannot use this to learn whom this node
        federates with (docs/cards.md says why)."""
        status = await self._peer_cards.lookup(peer_name)
        card = status.card if status is not None else None
        wanted = skill.casefold()
        matched = sorted(
            {s.id for s in card.skills if skill_matches(s.id, s.tags, wanted)}
        ) if card is not None else []
        if status is None or card is None or not matched:
            return SkillsNegotiateResult(
                skill=skill, peerName=peer_name, accepted=False, url="", matchedSkills=[]
            )
        return SkillsNegotiateResult(
            skill=skill, peerName=status.peer, accepted=True, url=card.url,
            matchedSkills=matched,
        )
