"""skills/query and skills/negotiate, answered from local agents and known peer cards."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from synthorg.a2a.errors import PEER_UNAVAILABLE, UNKNOWN_PEER, RpcError
from synthorg.generated.models import AgentConfig, SkillsNegotiateResult

# A peer's card as a JSON dict, or None when it is not known (yet) or unreachable.
CardLookup = Callable[[str], Any]


def _skill_matches(skill: dict[str, Any] | Any, wanted: str) -> bool:
    """By id or tag, case-insensitively. Accepts card skills (dicts) and config skills."""
    get = skill.get if isinstance(skill, dict) else lambda key, default=None: getattr(
        skill, key, default
    )
    tags = get("tags", None) or []
    return get("id", "").casefold() == wanted or any(t.casefold() == wanted for t in tags)


class SkillDirectory:
    def __init__(
        self,
        agents: Sequence[AgentConfig],
        peer_names: Callable[[], list[str]],
        peer_card: CardLookup,
    ) -> None:
        self._agents = agents
        self._peer_names = peer_names
        self._peer_card = peer_card

    async def query(self, skill: str) -> tuple[list[str], list[str]]:
        wanted = skill.casefold()
        agents = sorted(
            a.id for a in self._agents if any(_skill_matches(s, wanted) for s in a.skills or [])
        )
        peers = []
        for name in self._peer_names():
            card = self._peer_card(name)
            if card and any(_skill_matches(s, wanted) for s in card.get("skills", [])):
                peers.append(name)
        return agents, sorted(peers)

    async def negotiate(self, skill: str, peer_name: str) -> SkillsNegotiateResult:
        if peer_name not in self._peer_names():
            raise RpcError(UNKNOWN_PEER, "Unknown peer: no catalog record by that name")
        card = self._peer_card(peer_name)
        if not card:
            raise RpcError(PEER_UNAVAILABLE, "The peer's card is not available")
        wanted = skill.casefold()
        matched = sorted(s["id"] for s in card.get("skills", []) if _skill_matches(s, wanted))
        return SkillsNegotiateResult(
            skill=skill,
            peerName=peer_name,
            accepted=bool(matched),
            url=str(card.get("url", "")),
            matchedSkills=matched,
        )
