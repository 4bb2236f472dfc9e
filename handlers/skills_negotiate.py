"""skills/negotiate: whether a catalog peer's card offers a skill, and where to send the task."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.generated.models import SkillsNegotiateParams, SkillsNegotiateResult


async def handle(params: SkillsNegotiateParams, ctx: RpcContext) -> SkillsNegotiateResult:
    return await ctx.skills.negotiate(params.skill, params.peerName)
