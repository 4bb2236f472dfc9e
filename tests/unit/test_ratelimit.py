"""The per-peer token bucket, on a clock the test moves."""

from __future__ import annotations

import pytest

from synthorg.gateway.ratelimit import PeerRateLimiter, process_share, retry_after


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def limiter(rate: float, burst: int, share: int = 1) -> tuple[PeerRateLimiter, Clock]:
    clock = Clock()
    return PeerRateLimiter(lambda: rate, lambda: burst, share, clock), clock


def admitted(limit: PeerRateLimiter, peer: str, count: int, own: float | None = None) -> int:
    return sum(1 for _ in range(count) if limit.admit(peer, own) == 0.0)


def test_off_admits_everything() -> None:
    limit, _ = limiter(0, 1)
    assert admitted(limit, "a", 1000) == 1000


def test_burst_then_refill_at_the_rate() -> None:
    limit, clock = limiter(2.0, 5)
    assert admitted(limit, "a", 10) == 5
    wait = limit.admit("a", None)
    assert wait == pytest.approx(0.5)
    assert retry_after(wait) == 1
    clock.now += 1.0
    assert admitted(limit, "a", 10) == 2


def test_peers_have_their_own_buckets() -> None:
    limit, _ = limiter(1.0, 2)
    assert admitted(limit, "flood", 10) == 2
    assert admitted(limit, "polite", 2) == 2


def test_catalog_override_wins_and_zero_means_unlimited() -> None:
    limit, _ = limiter(1.0, 2)
    assert admitted(limit, "vip", 100, own=0.0) == 100
    assert admitted(limit, "slow", 10, own=0.5) == 2
    assert limit.admit("slow", 0.5) == pytest.approx(2.0)


def test_share_divides_rate_and_burst_between_processes() -> None:
    limit, clock = limiter(10.0, 20, share=2)
    assert admitted(limit, "a", 100) == 10
    clock.now += 1.0
    assert admitted(limit, "a", 100) == 5


def test_share_keeps_at_least_one_request_of_burst() -> None:
    limit, _ = limiter(1.0, 1, share=4)
    assert admitted(limit, "a", 10) == 1


def test_process_share_is_workers_times_replicas() -> None:
    assert process_share({}) == 1
    assert process_share({"SYNTHORG_WORKERS": "2", "SYNTHORG_REPLICAS": "3"}) == 6
    assert process_share({"SYNTHORG_WORKERS": "junk"}) == 1


def test_bucket_holds_at_least_one_second_of_the_rate() -> None:
    limit, _ = limiter(1.0, 2)
    assert admitted(limit, "fast", 200, own=100.0) == 100
