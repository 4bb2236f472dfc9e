"""Pruning what push delivery leaves behind, from the node's maintenance pass.

Finished deliveries (delivered or given up) are kept OUTBOX_KEEP after their last claim ran
out, so an operator can still see recent outcomes, then deleted; receipts of pushes received
are deleted once older than the receiver's replay window (never when freshness is off: then
a receipt is all that refuses a replay). Each delete is bounded (PRUNE_BATCH rows, one short
transaction) and a pass makes at most PRUNE_ROUNDS of them per table, so a backlog is worked
off over several passes without holding the store's write lock for long.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from synthorg.observability.events import a2a as events
from synthorg.observability.log import emit
from synthorg.push.receiver import receipts_kept_after
from synthorg.store.push import PushOutbox, PushReceipts

OUTBOX_KEEP = 3600.0  # seconds a finished delivery stays
PRUNE_BATCH = 500
PRUNE_ROUNDS = 20


async def _drain(prune: Callable[[int], Awaitable[int]]) -> int:
    removed = 0
    for _ in range(PRUNE_ROUNDS):
        gone = await prune(PRUNE_BATCH)
        removed += gone
        if gone < PRUNE_BATCH:
            break
    return removed


async def prune(outbox: PushOutbox, receipts: PushReceipts, now: float,
                skew: int) -> tuple[int, int]:
    """(finished deliveries, receipts) removed by this pass."""
    outbox_gone = await _drain(lambda limit: outbox.prune(now - OUTBOX_KEEP, limit))
    receipts_gone = 0
    before = receipts_kept_after(now, skew)
    if before is not None:
        receipts_gone = await _drain(lambda limit: receipts.prune(before, limit))
    if outbox_gone or receipts_gone:
        emit(events.PUSH_PRUNED, outbox=outbox_gone, receipts=receipts_gone)
    return outbox_gone, receipts_gone
