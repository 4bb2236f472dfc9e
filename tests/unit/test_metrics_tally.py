"""Plain per-process counters and histogram buckets (synthorg/observability/tally.py), folded
into Prometheus families at scrape time, against prometheus-client's own Counter and
Histogram as the oracle: the same observations give the same samples, in one process and
summed over several (the library's multi-process files, written by real processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client import Counter as LibraryCounter
from prometheus_client import Histogram as LibraryHistogram
from prometheus_client.parser import text_string_to_metric_families

from synthorg.observability.metrics import LATENCY_BUCKETS
from synthorg.observability.tally import Counter, Histogram
from tests.support.node import ROOT

# Durations on both sides of bucket edges, an edge itself, and one past the last bucket.
DURATIONS = [0.0001, 0.0005, 0.0007, 0.003, 0.003, 0.02, 0.4, 0.5, 7.0, 12.0]
METHODS = ["tasks/get", "message/send", "tasks/get"]
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def oracle(durations: list[float], methods: list[str]) -> Samples:
    registry = CollectorRegistry()
    requests = LibraryCounter("synthorg_t_requests", "Requests.", ["method", "status"],
                              registry=registry)
    latency = LibraryHistogram("synthorg_t_seconds", "Latency.", ["method"],
                               buckets=LATENCY_BUCKETS, registry=registry)
    for i, seconds in enumerate(durations):
        method = methods[i % len(methods)]
        requests.labels(method, "200").inc()
        latency.labels(method).observe(seconds)
    found = samples(generate_latest(registry).decode())
    return {key: value for key, value in found.items() if not key[0].endswith("_created")}


class Registry:
    def __init__(self, *families: Any) -> None:
        self.families = families

    def collect(self) -> list[Any]:
        return [family.family() for family in self.families]


def test_one_process_folds_into_the_same_samples_as_the_library() -> None:
    requests = Counter("synthorg_t_requests", "Requests.", ("method", "status"))
    latency = Histogram("synthorg_t_seconds", "Latency.", ("method",), LATENCY_BUCKETS)
    for i, seconds in enumerate(DURATIONS):
        method = METHODS[i % len(METHODS)]
        requests.inc((method, "200"))
        latency.observe((method,), seconds)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Registry(requests, latency))  # type: ignore[arg-type]
    ours = samples(generate_latest(registry).decode())
    assert ours == oracle(DURATIONS, METHODS)
    assert ours[("synthorg_t_requests_total",
                 frozenset({("method", "tasks/get"), ("status", "200")}))] == 7


RECORD = """
import json, sys
from synthorg.observability.metrics import LATENCY_BUCKETS, families
from synthorg.observability.tally import Counter, Histogram

durations, methods = json.loads(sys.argv[1])
requests = Counter("synthorg_t_requests", "Requests.", ("method", "status"))
latency = Histogram("synthorg_t_seconds", "Latency.", ("method",), LATENCY_BUCKETS)
shared = families().shared  # this worker's files
requests.share(shared)
latency.share(shared)
for i, seconds in enumerate(durations):
    method = methods[i % len(methods)]
    requests.inc((method, "200"))
    latency.observe((method,), seconds)
"""


def test_several_workers_files_sum_to_the_librarys_totals(tmp_path: Path) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    halves = [(DURATIONS[:4], METHODS), (DURATIONS[4:], ["message/send"])]
    for durations, methods in halves:  # two worker processes, one after the other
        subprocess.run([sys.executable, "-c", textwrap.dedent(RECORD),
                        json.dumps([durations, methods])],
                       cwd=ROOT, env=env, check=True, timeout=60)
    assert len(list(tmp_path.glob("histogram_*.db"))) == 2

    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, str(tmp_path))  # type: ignore[no-untyped-call]
    summed = samples(generate_latest(registry).decode())
    expected: Samples = {}
    for durations, methods in halves:
        for key, value in oracle(durations, methods).items():
            expected[key] = expected.get(key, 0.0) + value
    ours = {k: v for k, v in summed.items() if k[0].startswith("synthorg_t_")}
    assert ours.keys() == expected.keys()
    for key, value in expected.items():
        assert abs(ours[key] - value) < 1e-9, key


def test_a_worker_file_grows_past_its_first_mapping(tmp_path: Path) -> None:
    """Enough series that a worker's files outgrow their first 64 KiB: values written before
    and after the file grew are all there."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    methods = [f"method-{i:03d}" for i in range(80)]
    durations = [DURATIONS[i % len(DURATIONS)] for i in range(240)]
    subprocess.run([sys.executable, "-c", textwrap.dedent(RECORD),
                    json.dumps([durations, methods])],
                   cwd=ROOT, env=env, check=True, timeout=60)
    [histograms] = tmp_path.glob("histogram_*.db")
    assert histograms.stat().st_size > 1 << 16

    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, str(tmp_path))  # type: ignore[no-untyped-call]
    summed = samples(generate_latest(registry).decode())
    ours = {k: v for k, v in summed.items() if k[0].startswith("synthorg_t_")}
    expected = oracle(durations, methods)
    assert ours.keys() == expected.keys()
    for key, value in expected.items():
        assert abs(ours[key] - value) < 1e-9, key
