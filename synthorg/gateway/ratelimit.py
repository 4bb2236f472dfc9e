"""Per-peer rate limits: a token bucket per admitted peer, decided on headers after the gates.

Each process holds its share of the limit: with N processes serving the same peers (the
node's workers, times `SYNTHORG_REPLICAS` replicas sharing a database), each refills at
rate/N and holds burst/N (at least one request), so together they never admit more than the
limit. The decision is a dict read and a few float operations, with no round trip: a shared
bucket (a row in the database, or Redis) would cost one round trip on every admitted request,
more than the 10% the hot path may spend on it (see docs/operations.md for the measurement).
The price is that a peer whose connections all land on one process is held to that
process's share; the kernel spreads connections over the workers (SO_REUSEPORT), and a load
balancer over the replicas, so a peer with several connections gets the whole limit.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable

REPLICAS_ENV = "SYNTHORG_REPLICAS"
WORKERS_ENV = "SYNTHORG_WORKERS"  # set by `serve --workers N` for each worker


def process_share(environ: dict[str, str] | None = None) -> int:
    """How many processes share each peer's limit: workers times replicas (at least 1)."""
    env = os.environ if environ is None else environ
    total = 1
    for name in (WORKERS_ENV, REPLICAS_ENV):
        # serve refuses a malformed worker count before a worker starts
        with contextlib.suppress(ValueError):
            total *= max(1, int(env.get(name) or 1))
    return total


class PeerRateLimiter:
    """`admit(peer)` answers 0.0 to admit, else the seconds until the peer's next token."""

    def __init__(
        self,
        rate: Callable[[], float],
        burst: Callable[[], int],
        override: Callable[[str], float | None],
        share: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rate = rate  # a2a.peer_rate_limit_per_second, read per request (0: off)
        self._burst = burst
        self._override = override  # the catalog record's own limit, if any
        self._share = max(1, share)
        self._clock = clock
        self._buckets: dict[str, list[float]] = {}  # peer -> [tokens, last refill]

    def admit(self, peer: str) -> float:
        own = self._override(peer)
        rate = self._rate() if own is None else own
        if rate <= 0:
            return 0.0
        share = self._share
        # The bucket holds at least one second of the rate, so a peer given a high rate of
        # its own is not held to a burst sized for the default.
        capacity = max(1.0, max(float(self._burst()), rate) / share)
        rate /= share
        now = self._clock()
        bucket = self._buckets.get(peer)
        if bucket is None:
            bucket = self._buckets[peer] = [capacity, now]
        tokens = min(capacity, bucket[0] + (now - bucket[1]) * rate)
        bucket[1] = now
        if tokens >= 1.0:
            bucket[0] = tokens - 1.0
            return 0.0
        bucket[0] = tokens
        return (1.0 - tokens) / rate


def retry_after(wait: float) -> int:
    """Whole seconds for `Retry-After`: never 0, which would invite an immediate retry."""
    return max(1, math.ceil(wait))
