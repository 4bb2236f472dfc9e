"""agent/getAuthenticatedExtendedCard: the extended card, behind the same gates as every
JSON-RPC method. It adds the skills marked `visibility: peers` in config.yaml; on an agent's
endpoint it is that agent's card."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.generated.models import (
    AgentGetAuthenticatedExtendedCardParams,
    AgentGetAuthenticatedExtendedCardResult,
)


async def handle(
    params: AgentGetAuthenticatedExtendedCardParams, ctx: RpcContext
) -> AgentGetAuthenticatedExtendedCardResult:
    return ctx.extended_card()
