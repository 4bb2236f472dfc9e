"""skills/query: which of this node's agents and which catalog peers offer a skill."""

from __future__ import annotations

from synthorg.gateway.context import RpcContext
from synthorg.generated.models import SkillsQueryParams, SkillsQueryResult


async def handle(params: SkillsQueryParams, ctx: RpcContext) -> SkillsQueryResult:
    agents, peers = await ctx.node.skills.query(params.skill)
    return SkillsQueryResult(skill=params.skill, agents=agents, peers=peers)
