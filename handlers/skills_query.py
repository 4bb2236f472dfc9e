"""skills/query: which of this node's agents and which catalog peers offer a skill."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.generated.models import SkillsQueryParams, SkillsQueryResult


async def handle(params: SkillsQueryParams, ctx: RpcContext) -> SkillsQueryResult:
    return await ctx.skills.query(params.skill)
