"""GetExtendedAgentCard: the extended card (0.3's agent/getAuthenticatedExtendedCard), behind
the same gates as every JSON-RPC method, written with 1.0's members only and signed as that
document (the 0.3 document's signature covers other bytes)."""

from __future__ import annotations

from handlers.context import RpcContext
from synthorg.generated.models import V1GetExtendedAgentCardParams, V1GetExtendedAgentCardResult


async def handle(
    params: V1GetExtendedAgentCardParams, ctx: RpcContext
) -> V1GetExtendedAgentCardResult:
    return ctx.extended_card_v1()
