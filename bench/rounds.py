"""Alternating rounds: every row measured once per round, rounds repeated, medians reported.

On a shared, noisy machine a row measured in one block can land on a quiet or a busy minute;
measured once per round, in an order that rotates each round, every row sees the same
minutes, so their ratios hold even when the absolute rates drift. A row's figure is the median
of its rounds, its spread the lowest and highest.

What the scripts share: the load scripts' options (`add_load_options`: rounds, seconds per
run, warm-up, a quick smoke run), the rounds themselves (`each_round`: rows rotated, or
`shuffled_rounds`: cases in a seeded shuffle), and for a script that runs a child process per
tree (this one, and `--baseline`'s checkout: `trees`) each round's results gathered with this
tree's ratio to the baseline's (`TreeRounds`). Such a script imports these in its parent only:
its child runs with the other tree's `bench` first on the path, which may not have them.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
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


# -- the options ----------------------------------------------------------------------------


def add_load_options(parser: argparse.ArgumentParser, *, duration: float, warmup: float,
                     quick: tuple[int, float, float], seconds: type = int,
                     quick_help: str | None = None) -> None:
    """--rounds, --duration, --warmup and --quick (a smoke run: `quick` is its rounds,
    duration and warm-up); `finish_load_options` applies --quick and checks them."""
    parser.add_argument("--rounds", type=int, default=5, metavar="N",
                        help="rounds, each measuring every row once (default 5)")
    parser.add_argument("--duration", type=seconds, default=duration, metavar="S",
                        help=f"seconds of each measured run (default {duration:g})")
    parser.add_argument("--warmup", type=seconds, default=warmup, metavar="S",
                        help=f"seconds of load before each measured run, not counted "
                        f"(default {warmup:g})")
    rounds, quick_duration, quick_warmup = quick
    parser.add_argument("--quick", action="store_true", help=quick_help or (
        f"smoke run: {rounds} rounds of {quick_duration:g} s"
        + (", no warm-up" if not quick_warmup else "")))
    parser.set_defaults(quick_values=quick)


def finish_load_options(parser: argparse.ArgumentParser,
                        args: argparse.Namespace) -> argparse.Namespace:
    if args.quick:
        args.rounds, args.duration, args.warmup = args.quick_values
    if args.rounds < 1 or args.duration <= 0 or args.warmup < 0:
        parser.error("--rounds must be at least 1, --duration positive, --warmup at least 0")
    return args


def trees(baseline: Path | None, here: Path) -> dict[str, Path]:
    """The trees measured, by name: this one, after the baseline when there is one."""
    if baseline is None:
        return {"this": here}
    return {"baseline": baseline.resolve(), "this": here}


# -- the rounds -----------------------------------------------------------------------------


def each_round(rows: Sequence[T], rounds: int) -> Iterator[T]:
    """Every row once per round, rotated each round (`rotation`), each round announced."""
    for index in range(rounds):
        print(f"round {index + 1}/{rounds}:", flush=True)
        yield from rotation(rows, index)


def shuffled_rounds(items: Sequence[T], rounds: int) -> Iterator[list[T]]:
    """Each round's order of `items`: a shuffle seeded by the round, so no item always runs
    first and a rerun runs them in the same orders."""
    for index in range(rounds):
        order = list(items)
        random.Random(index).shuffle(order)
        yield order


@dataclass
class TreeRounds:
    """Each tree's results (case -> value) round by round, and this tree's ratio to the
    baseline's in each round, for the cases both have."""

    names: Sequence[str]
    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    ratios: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.samples = {name: {} for name in self.names}

    def add(self, this_round: dict[str, dict[str, float]]) -> None:
        for name, results in this_round.items():
            for case, value in results.items():
                self.samples[name].setdefault(case, []).append(value)
        if "baseline" in this_round:
            for case, value in this_round["this"].items():
                if case in this_round["baseline"]:  # a case the baseline has too
                    self.ratios.setdefault(case, []).append(
                        value / this_round["baseline"][case])

    def median(self, name: str, case: str) -> float | None:
        values = self.samples[name].get(case)
        return statistics.median(values) if values else None

    def ratio(self, case: str) -> float | None:
        values = self.ratios.get(case)
        return statistics.median(values) if values else None
