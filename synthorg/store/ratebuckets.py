"""The shared side of the per-peer rate limits: one token bucket per peer, in a store every
process serving the peer reaches (the SQLite file beside the node's, shared by its workers;
the PostgreSQL database, shared by replicas). A process takes tokens from it in small
leases, so the round trip is paid once per lease, not once per request."""

from __future__ import annotations

from typing import NamedTuple, Protocol


class Lease(NamedTuple):
    granted: int  # tokens taken from the shared bucket (0: none left)
    left: float  # tokens the bucket holds after the take (for the wait when none)


class RateBuckets(Protocol):
    async def take(self, peer: str, rate: float, capacity: float, want: int) -> Lease:
        """Refill `peer`'s bucket (`rate` tokens a second, up to `capacity`) to now and take
        up to `want` whole tokens from it, in one atomic step."""
        ...

    def close(self) -> None: ...
