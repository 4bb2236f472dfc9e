"""Per-peer token buckets in PostgreSQL (`rate_buckets`), shared by every replica.

A lease is one autocommitted UPSERT on the peer's row, timed by the database's clock (the
replicas' clocks may differ; the database's is the one they share). SET reads the old row,
so `granted` and `tokens` see the same refill.
"""

from __future__ import annotations

from synthorg.store.postgres.database import PgDatabase
from synthorg.store.ratebuckets import Lease

_NOW = "extract(epoch from clock_timestamp())::double precision"
_REFILLED = f"least($3, b.tokens + greatest(0.0, {_NOW} - b.ts) * $2)"
_TAKE = f"""INSERT INTO rate_buckets AS b (peer, tokens, ts, granted)
VALUES ($1, $3 - least($4, floor($3)), {_NOW}, least($4, floor($3))::integer)
ON CONFLICT (peer) DO UPDATE SET
    tokens = {_REFILLED} - least($4, floor({_REFILLED})),
    granted = least($4, floor({_REFILLED}))::integer,
    ts = greatest(b.ts, {_NOW})
RETURNING granted, tokens"""


class PgRateBuckets:
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def take(self, peer: str, rate: float, capacity: float, want: int) -> Lease:
        row = await self._db.fetchrow(_TAKE, peer, float(rate), float(capacity), want)
        assert row is not None  # an UPSERT ... RETURNING answers its row
        return Lease(int(row[0]), float(row[1]))

    def close(self) -> None:
        pass  # the pool is the node's
