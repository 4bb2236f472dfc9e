"""Alternating rounds: every row measured once per round, rounds repeated, medians reported.

On a shared, noisy machine a row measured in one block can land on a quiet or a busy minute;
measured once per round, in an order that rotates each round, every row sees the same
minutes, so their ratios hold even when the absolute rates drift. A row's figure is the median
of its rounds, its spread the lowest and highest.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from bench.servers import Server
from bench.system import cpu_busy_seconds, cpu_seconds
from bench.wrk import WrkResult

T = TypeVar("T")
QUIET = 0.10  # a round is quiet for a row when others took less than this of the server's CPU


@dataclass(frozen=True)
class Spread:
    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        """Of the values that are numbers (a run with no answers has no CPU per request)."""
        values = [value for value in values if value == value]
        if not values:
            return cls(float("nan"), float("nan"), float("nan"))
        return cls(statistics.median(values), min(values), max(values))

    def relative(self) -> float:
        """(high - low) / median: how far apart the rounds were."""
        return (self.high - self.low) / self.median if self.median else float("nan")

    def show(self, digits: int = 0) -> str:
        return (f"{self.median:,.{digits}f} [{self.low:,.{digits}f}-{self.high:,.{digits}f}]"
                if self.median == self.median else "-")


@dataclass
class Sample:
    """One measured wrk run of a row, with the server's CPU time over it, and the share of
    the server's CPU that other processes (or the hypervisor) took meanwhile, when the server
    is pinned to one."""

    result: WrkResult
    server_cpu_s: float
    others: float = float("nan")

    @property
    def cpu_us_per_request(self) -> float:
        requests = self.result.requests
        return self.server_cpu_s * 1e6 / requests if requests else float("nan")


@dataclass
class RowSamples:
    key: str
    samples: list[Sample] = field(default_factory=list)
    unexpected: int = 0  # answers without the expected status, and socket errors

    def rps(self) -> Spread:
        return Spread.of([s.result.rps for s in self.samples])

    def quiet_rps(self) -> tuple[Spread, int]:
        """req/s over the rounds in which others left the server's CPU alone (`QUIET`), and
        how many rounds those were: the server's own rate, where the machine let it run."""
        quiet = [s.result.rps for s in self.samples if s.others < QUIET]
        return Spread.of(quiet), len(quiet)

    def cpu_us(self) -> Spread:
        return Spread.of([s.cpu_us_per_request for s in self.samples])

    def others(self) -> Spread:
        return Spread.of([s.others for s in self.samples if s.others == s.others])

    def latency_ms(self, percentile: str) -> Spread:
        return Spread.of([s.result.latency_us[percentile] / 1000 for s in self.samples])


def rotation(items: Sequence[T], round_index: int) -> list[T]:
    """`items` starting at `round_index` (mod its length), wrapping: no row always runs first,
    or always right after the same other row."""
    if not items:
        return []
    start = round_index % len(items)
    return [*items[start:], *items[:start]]


def measure(server: Server, run: Callable[[], WrkResult], cpu: int | None = None) -> Sample:
    """`run` (one wrk run against `server`), with the CPU time every process of the server used
    meanwhile, from /proc (utime + stime); with `cpu` (the one the server is pinned to), also
    the share of it others used."""
    before = sum(cpu_seconds(pid) for pid in server.pids)
    busy_before = cpu_busy_seconds(cpu) if cpu is not None else (0.0, 0.0)
    result = run()
    used = sum(cpu_seconds(pid) for pid in server.pids) - before
    others = float("nan")
    if cpu is not None and result.seconds > 0:
        busy, stolen = cpu_busy_seconds(cpu)
        others = max(0.0, busy - busy_before[0] + stolen - busy_before[1] - used) / result.seconds
    return Sample(result, used, others)


def unexpected(result: WrkResult, expect_status: int) -> int:
    """Answers without the expected status, plus socket errors and timeouts."""
    errors = result.errors
    sockets = errors["connect"] + errors["read"] + errors["write"] + errors["timeout"]
    if expect_status < 400:
        return errors["status"] + sockets
    return result.requests - errors["status"] + sockets  # wrk counts >= 400 only
