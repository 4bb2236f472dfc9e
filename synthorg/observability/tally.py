"""Per-process counters and histograms, plain numbers in dicts, folded into Prometheus
families only when /metrics is scraped.

A request adds to a dict entry: no lock, no object of the client library, no file. With
several workers (`PROMETHEUS_MULTIPROC_DIR` set), the entries a loop turn changed are copied
once, at the end of that turn, into this process's memory-mapped files, in the client
library's own format (keys, `counter_<pid>.db`, `histogram_<pid>.db`), so its
`MultiProcessCollector` sums every worker's values at a scrape as before.

One event loop per process updates them (the node's); they are not guarded for threads.
"""

from __future__ import annotations

import asyncio
import math
import os
from bisect import bisect_left
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

Labels = tuple[str, ...]


class Counter:
    """A counter family: its value per label values."""

    kind = "counter"

    def __init__(self, name: str, help_text: str, labels: Labels = ()) -> None:
        self.name = name
        self.help_text = help_text
        self.labels = labels
        self.values: dict[Labels, float] = {}
        self.sync: Sync | None = None  # set when the values are shared with other workers

    def inc(self, key: Labels, amount: float = 1) -> None:
        values = self.values
        values[key] = values.get(key, 0) + amount
        if self.sync is not None:
            self.sync.mark(self, key, 0)

    def set_total(self, key: Labels, total: float) -> None:
        """A count kept elsewhere (only ever growing), taken as this counter's value."""
        if self.values.get(key) != total:
            self.values[key] = total
            if self.sync is not None:
                self.sync.mark(self, key, 0)

    def family(self) -> Any:
        from prometheus_client.metrics_core import CounterMetricFamily

        family = CounterMetricFamily(self.name, self.help_text, labels=self.labels)
        for key, value in self.values.items():
            family.add_metric(key, value)
        return family

    def files_entries(self, key: Labels, index: int) -> Iterator[tuple[str, Labels, Labels,
                                                                      float]]:
        yield f"{self.name}_total", self.labels, key, self.values[key]


class Histogram:
    """A histogram family: per label values, the count of each bucket (not cumulative) and,
    last, the sum of what was observed."""

    kind = "histogram"

    def __init__(self, name: str, help_text: str, labels: Labels,
                 buckets: tuple[float, ...]) -> None:
        self.name = name
        self.help_text = help_text
        self.labels = labels
        self.bounds = (*buckets, math.inf)
        self.values: dict[Labels, list[float]] = {}
        self.sync: Sync | None = None

    def observe(self, key: Labels, amount: float) -> None:
        counts = self.values.get(key)
        if counts is None:
            counts = self._new(key)
        # The first bucket whose bound is at least `amount`, as the client library counts.
        index = bisect_left(self.bounds, amount)
        counts[index] += 1
        counts[-1] += amount
        if self.sync is not None:
            self.sync.mark(self, key, index)

    def _new(self, key: Labels) -> list[float]:
        counts = self.values[key] = [0.0] * (len(self.bounds) + 1)
        if self.sync is not None:  # every bucket in the files, the empty ones too
            for index in range(len(self.bounds)):
                self.sync.mark(self, key, index)
        return counts

    def family(self) -> Any:
        from prometheus_client.metrics_core import HistogramMetricFamily

        family = HistogramMetricFamily(self.name, self.help_text, labels=self.labels)
        edges = self._edges()
        for key, counts in self.values.items():
            cumulative, buckets = 0.0, []
            for edge, count in zip(edges, counts, strict=False):
                cumulative += count
                buckets.append((edge, cumulative))
            family.add_metric(key, buckets, counts[-1])
        return family

    @cache  # noqa: B019 - a few families, each living as long as the process
    def _edges(self) -> tuple[str, ...]:
        """The buckets' `le` labels, as the client library writes them."""
        from prometheus_client.utils import floatToGoString

        return tuple(floatToGoString(bound) for bound in self.bounds)  # type: ignore[no-untyped-call]

    def files_entries(self, key: Labels, index: int) -> Iterator[tuple[str, Labels, Labels,
                                                                      float]]:
        counts = self.values[key]
        yield (f"{self.name}_bucket", (*self.labels, "le"), (*key, self._edges()[index]),
               counts[index])
        yield f"{self.name}_sum", self.labels, key, counts[-1]


Family = Counter | Histogram


class Sync:
    """This worker's changed entries, copied into its files at the end of the loop turn."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._files: dict[str, Any] = {}
        self._dirty: set[tuple[Family, Labels, int]] = set()
        self._keys: dict[tuple[str, Labels, Labels], str] = {}
        self._scheduled = False
        self.before: Callable[[], None] | None = None  # brings outside counts in first

    def mark(self, family: Family, key: Labels, index: int) -> None:
        self._dirty.add((family, key, index))
        if self._scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.write()  # no loop turn to wait for
            return
        self._scheduled = True
        loop.call_soon(self.write)

    def write(self) -> None:
        self._scheduled = True  # what `before` marks is written now, not at another turn
        if self.before is not None:
            self.before()
        self._scheduled = False
        dirty, self._dirty = self._dirty, set()
        for family, key, index in dirty:
            target = self._file(family.kind)
            for name, labelnames, labelvalues, value in family.files_entries(key, index):
                target.write_value(self._key(family, name, labelnames, labelvalues), value, 0.0)

    def _file(self, kind: str) -> Any:
        target = self._files.get(kind)
        if target is None:
            from prometheus_client.mmap_dict import MmapedDict

            path = os.path.join(self.directory, f"{kind}_{os.getpid()}.db")
            target = self._files[kind] = MmapedDict(path)  # type: ignore[no-untyped-call]
        return target

    def _key(self, family: Family, name: str, labelnames: Labels, labelvalues: Labels) -> str:
        cached = self._keys.get((name, labelnames, labelvalues))
        if cached is None:
            from prometheus_client.mmap_dict import mmap_key

            cached = mmap_key(family.name, name, list(labelnames), list(labelvalues),
                              family.help_text)
            self._keys[(name, labelnames, labelvalues)] = cached
        return cached
