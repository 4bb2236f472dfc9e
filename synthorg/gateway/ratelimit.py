"""Per-peer rate limits: a token bucket per admitted peer, decided on headers after the gates.

When several processes serve the same peers (the node's workers; replicas sharing a
database), the bucket is shared: it lives in the store they all reach, and each process
takes tokens from it in small leases (`LEASE_WINDOW` of the peer's rate, at least one), so a
peer's total stays within its rate and burst whichever process its connections land on, and
the store's round trip is paid once per lease. A decision is a dict read and a few float
operations; when a lease runs below half, the next is taken in the background, so a steady
peer's requests do not wait for the store at all. When the shared bucket said it was empty,
the process answers 429 without asking again until the bucket's next token is due, so a
flood costs the store nothing. Leased tokens not used within `LEASE_TTL` are dropped. The
slack: a peer idle long enough for a full bucket may get up to a lease and a half per
process more than its burst at once.

A lone process (one worker, a store no other process shares) keeps the bucket in memory.
If the shared store cannot be reached, a process falls back to its share of the limit
(rate and burst divided by workers times `SYNTHORG_REPLICAS`) for `RETRY_SHARED` seconds at a
time, so a limit always holds and a store that is down is not asked on every request.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections.abc import Awaitable, Callable

from synthorg.observability.events.a2a import RATE_LIMIT_FALLBACK
from synthorg.observability.log import emit
from synthorg.store.ratebuckets import Lease

REPLICAS_ENV = "SYNTHORG_REPLICAS"
WORKERS_ENV = "SYNTHORG_WORKERS"  # set by `serve --workers N` for each worker
LEASE_WINDOW = 0.05  # a lease is about this many seconds of the peer's rate
LEASE_TTL = 1.0  # seconds a process may keep leased tokens before they are dropped
RETRY_SHARED = 1.0  # seconds on its own share after the shared store failed to answer

Take = Callable[[str, float, float, int], Awaitable[Lease]]


def process_share(environ: dict[str, str] | None = None) -> int:
    """How many processes share each peer's limit: workers times replicas (at least 1)."""
    env = os.environ if environ is None else environ
    total = 1
    for name in (WORKERS_ENV, REPLICAS_ENV):
        # serve refuses a malformed worker count before a worker starts
        with contextlib.suppress(ValueError):
            total *= max(1, int(env.get(name) or 1))
    return total


def lease_size(rate: float, capacity: float) -> int:
    """Tokens taken per round trip: `LEASE_WINDOW` of the rate, at least 1, at most the
    bucket's whole tokens."""
    return max(1, min(int(capacity), math.ceil(rate * LEASE_WINDOW)))


class PeerRateLimiter:
    """`admit(peer, own)` answers 0.0 to admit, a positive wait (seconds until the peer's
    next token) to refuse, or None when only the shared bucket can say: then
    `take(peer, own)` answers the same way after one round trip. `own` is the peer's own
    limit, from the catalog record the gates admitted it by (`Admitted.rate_limit`): the
    limiter never reads the catalog itself."""

    def __init__(
        self,
        rate: Callable[[], float],
        burst: Callable[[], int],
        share: int = 1,
        clock: Callable[[], float] = time.monotonic,
        shared: Take | None = None,
    ) -> None:
        self._rate = rate  # a2a.peer_rate_limit_per_second, read per request (0: off)
        self._burst = burst
        self._share = max(1, share)
        self._clock = clock
        self._shared = shared  # None: this process alone serves its peers
        self._buckets: dict[str, list[float]] = {}  # peer -> [tokens, last refill]
        # peer -> [tokens, expiry, empty until, low water (a prefetch starts below it)]
        self._leases: dict[str, list[float]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._prefetching: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._fell_back = False
        self._shared_down_until = 0.0

    def _limit(self, own: float | None) -> tuple[float, float]:
        """(rate, capacity) of the peer's whole limit; rate 0 when it has none. `own`: the
        catalog record's own limit (None: the setting applies)."""
        rate = self._rate() if own is None else own
        if rate <= 0:
            return 0.0, 0.0
        # The bucket holds at least one second of the rate, so a peer given a high rate of
        # its own is not held to a burst sized for the default.
        return rate, max(1.0, float(self._burst()), rate)

    def admit(self, peer: str, own: float | None) -> float | None:
        rate, capacity = self._limit(own)
        if rate <= 0:
            return 0.0
        if self._shared is None:
            return self._local(peer, rate, capacity, self._share)
        now = self._clock()
        if now < self._shared_down_until:
            return self._local(peer, rate, capacity, self._share)
        lease = self._leases.get(peer)
        if lease is None:
            return None
        if lease[0] >= 1.0 and now < lease[1]:
            lease[0] -= 1.0
            if lease[0] < lease[3] and peer not in self._prefetching:
                self._prefetch(peer, own)
            return 0.0
        if now < lease[2]:
            return lease[2] - now
        return None

    async def take(self, peer: str, own: float | None) -> float:
        """Lease tokens from the shared bucket and decide (the request waits for the round
        trip only when its process's lease is spent before the next one arrived)."""
        assert self._shared is not None
        async with self._lock(peer):
            decided = self.admit(peer, own)  # another request may have leased meanwhile
            if decided is not None:
                return decided
            failed = await self._lease(peer, own)
            if failed:
                rate, capacity = self._limit(own)
                return 0.0 if rate <= 0 else self._local(peer, rate, capacity, self._share)
            decided = self.admit(peer, own)
            return 0.0 if decided is None else decided

    def _lock(self, peer: str) -> asyncio.Lock:
        lock = self._locks.get(peer)
        if lock is None:
            lock = self._locks[peer] = asyncio.Lock()
        return lock

    def _prefetch(self, peer: str, own: float | None) -> None:
        """The lease runs low: take the next one in the background, so the requests that
        follow find tokens without a round trip."""
        self._prefetching.add(peer)

        async def refill() -> None:
            try:
                async with self._lock(peer):
                    await self._lease(peer, own)
            finally:
                self._prefetching.discard(peer)

        task = asyncio.get_running_loop().create_task(refill())
        self._tasks.add(task)  # a reference until done: the loop keeps only weak ones
        task.add_done_callback(self._tasks.discard)

    async def _lease(self, peer: str, own: float | None) -> bool:
        """Take a lease into this process's state; True when the shared store failed."""
        rate, capacity = self._limit(own)
        if rate <= 0:
            return False
        want = lease_size(rate, capacity)
        try:
            assert self._shared is not None
            lease = await self._shared(peer, rate, capacity, want)
        except Exception as exc:
            self._shared_down_until = self._clock() + RETRY_SHARED
            if not self._fell_back:  # said once per process: the store said the rest
                self._fell_back = True
                emit(RATE_LIMIT_FALLBACK, level="warning", error=type(exc).__name__,
                     share=self._share)
            return True
        now = self._clock()
        state = self._leases.get(peer)
        if state is None or now >= state[1]:  # tokens of an expired lease are dropped
            state = self._leases[peer] = [0.0, 0.0, 0.0, want / 2]
        if lease.granted <= 0:
            state[2] = now + max(0.0, 1.0 - lease.left) / rate
        else:
            state[0] += lease.granted
            state[1], state[2], state[3] = now + LEASE_TTL, 0.0, want / 2
        return False

    def _local(self, peer: str, rate: float, capacity: float, share: int) -> float:
        """This process's own bucket, holding 1/share of the limit (at least one token)."""
        capacity = max(1.0, capacity / share)
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
