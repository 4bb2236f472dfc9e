"""The shared per-peer rate-limit buckets, on both stores (SQLite: two handles on one data
dir, as two workers hold it; PostgreSQL: two handles on one database, as two replicas do),
and the limiter that takes tokens from them in leases."""

from __future__ import annotations

import asyncio
from pathlib import Path

from synthorg.gateway.ratelimit import PeerRateLimiter, lease_size
from synthorg.store.ratebuckets import Lease
from synthorg.store.sqlite.ratebuckets import SqliteRateBuckets
from tests.unit.test_store_contract import Bundles, bundles  # noqa: F401 (the fixture)

SLOW = 0.001  # tokens a second: nothing refills while a test runs


def limiter(take: object, burst: int, share: int = 2) -> PeerRateLimiter:
    return PeerRateLimiter(lambda: SLOW, lambda: burst, share,
                           shared=take)  # type: ignore[arg-type]


async def decide(limit: PeerRateLimiter, peer: str) -> float:
    wait = limit.admit(peer, None)
    return await limit.take(peer, None) if wait is None else wait


def test_takes_from_two_handles_share_one_bucket(bundles: Bundles) -> None:  # noqa: F811
    one, two = bundles.open(), bundles.open()

    async def scenario() -> list[Lease]:
        return [await stores.rate_buckets.take("peer-a", SLOW, 5.0, 2)
                for stores in (one, two, one, two)]

    leases = asyncio.run(scenario())
    assert [lease.granted for lease in leases] == [2, 2, 1, 0]
    assert leases[-1].left < 1.0


def test_two_processes_admit_the_burst_once_between_them(bundles: Bundles) -> None:  # noqa: F811
    one, two = bundles.open(), bundles.open()
    first, second = limiter(one.rate_buckets.take, 10), limiter(two.rate_buckets.take, 10)

    async def scenario() -> tuple[int, int, float]:
        admitted = [0, 0]
        for i in range(40):
            if await decide((first, second)[i % 2], "peer-a") == 0.0:
                admitted[i % 2] += 1
        return admitted[0], admitted[1], await decide(first, "peer-a")

    a, b, wait = asyncio.run(scenario())
    assert a + b == 10 and a > 0 and b > 0
    assert wait > 1.0  # refused, and told when the shared bucket's next token is due


def test_one_process_may_use_the_whole_burst(bundles: Bundles) -> None:  # noqa: F811
    stores = bundles.open()
    limit = limiter(stores.rate_buckets.take, 10)

    async def scenario() -> int:
        return sum([await decide(limit, "peer-a") == 0.0 for _ in range(30)])

    assert asyncio.run(scenario()) == 10  # a per-process share would have stopped at 5


def test_a_lease_is_a_slice_of_the_rate() -> None:
    assert lease_size(4.0, 4.0) == 1
    assert lease_size(1000.0, 1000.0) == 50
    assert lease_size(1000.0, 20.0) == 20  # never more than the bucket holds


def test_a_store_that_fails_leaves_each_process_its_share(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    broken = SqliteRateBuckets(not_a_dir)  # its file cannot be made

    async def scenario() -> int:
        limit = limiter(broken.take, 10, share=2)
        return sum([await decide(limit, "peer-a") == 0.0 for _ in range(30)])

    assert asyncio.run(scenario()) == 5
