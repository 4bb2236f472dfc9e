"""skills/negotiate: whether a catalog peer's card offers a skill, and where to send the task."""

from __future__ import annotations

from synthorg.gateway.context import RpcContext
from synthorg.generated.models import SkillsNegotiateParams, SkillsNegotiateResult


async def handle(params: SkillsNegotiateParams, ctx: RpcContext) -> SkillsNegotiateResult:
    result: SkillsNegotiateResult = await ctx.node.skills.negotiate(params.skill, params.peerName)
    return result
