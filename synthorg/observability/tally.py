"""Per-process counters and histograms as plain numbers, folded into Prometheus families only
when /metrics is scraped.

A request adds to a number: no lock, no object of the client library, no system call. In
one process the numbers are dict entries. With several workers (`PROMETHEUS_MULTIPROC_DIR`
set), each worker's numbers are doubles in a memory-mapped file of its own, laid out in the
client library's multi-process format (`counter_*.db`, `histogram_*.db`: the library's keys,
each followed by its value and a timestamp), so the library's `MultiProcessCollector` sums
every worker's values at a scrape, as fresh as the last request each one counted.

One event loop per process updates them (the node's); they are not guarded for threads.
"""

from __future__ import annotations

import math
import mmap
import os
import secrets
import struct
from bisect import bisect_left
from functools import cache
from typing import Any, BinaryIO

Labels = tuple[str, ...]
_INITIAL_SIZE = 1 << 16
_USED = struct.Struct("i")


class SlotFile:
    """One worker's values of one kind (counter or histogram), in the client library's file
    format: a 4-byte used length, 4 bytes of padding, then entries (4-byte key length, the
    key, padding to 8 bytes, the value and a timestamp as doubles). `view` indexes the
    doubles; a value is added to in place."""

    def __init__(self, directory: str, kind: str) -> None:
        # A name no other process can have (a worker restarted with a reused pid included);
        # the library reads the kind from what comes before the first underscore.
        path = os.path.join(directory, f"{kind}_{os.getpid()}_{secrets.token_hex(4)}.db")
        self._file: BinaryIO = open(path, "w+b")  # noqa: SIM115 - open for the process's life
        self._file.truncate(_INITIAL_SIZE)
        self._capacity = _INITIAL_SIZE
        self._map = mmap.mmap(self._file.fileno(), self._capacity)
        self.view = memoryview(self._map).cast("d")
        self._used = 8
        _USED.pack_into(self._map, 0, self._used)

    def slot(self, key: str) -> int:
        """A new entry for `key` (value 0); the index of its value in `view`."""
        encoded = key.encode("utf-8")
        padded = encoded + b" " * (8 - (len(encoded) + 4) % 8)
        entry = struct.pack(f"i{len(padded)}sdd", len(encoded), padded, 0.0, 0.0)
        while self._used + len(entry) > self._capacity:
            self._grow()
        self._map[self._used:self._used + len(entry)] = entry
        self._used += len(entry)
        _USED.pack_into(self._map, 0, self._used)  # readers see the entry only now
        return (self._used - 16) // 8

    def _grow(self) -> None:
        self.view.release()
        self._map.close()
        self._capacity *= 2
        self._file.truncate(self._capacity)
        self._map = mmap.mmap(self._file.fileno(), self._capacity)
        self.view = memoryview(self._map).cast("d")


class Shared:
    """This worker's files in the directory every worker of the node writes to."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._files: dict[str, SlotFile] = {}

    def file(self, kind: str) -> SlotFile:
        found = self._files.get(kind)
        if found is None:
            found = self._files[kind] = SlotFile(self.directory, kind)
        return found


def _key(metric: str, name: str, labelnames: Labels, labelvalues: Labels, help_text: str) -> str:
    from prometheus_client.mmap_dict import mmap_key

    return mmap_key(metric, name, list(labelnames), list(labelvalues), help_text)


class Counter:
    """A counter family: its value per label values."""

    def __init__(self, name: str, help_text: str, labels: Labels = ()) -> None:
        self.name = name
        self.help_text = help_text
        self.labels = labels
        self.values: dict[Labels, float] = {}  # in one process
        self._file: SlotFile | None = None  # with several workers
        self._slots: dict[Labels, int] = {}

    def share(self, shared: Shared) -> None:
        self._file = shared.file("counter")

    def inc(self, key: Labels, amount: float = 1) -> None:
        if self._file is None:
            values = self.values
            values[key] = values.get(key, 0) + amount
            return
        slot = self._slots.get(key) or self._slot(key)  # slot 0 is the file's header
        self._file.view[slot] += amount

    def set_total(self, key: Labels, total: float) -> None:
        """A count kept elsewhere (only ever growing), taken as this counter's value."""
        if self._file is None:
            self.values[key] = total
            return
        slot = self._slots.get(key) or self._slot(key)
        self._file.view[slot] = total

    def _slot(self, key: Labels) -> int:
        assert self._file is not None
        slot = self._slots[key] = self._file.slot(
            _key(self.name, f"{self.name}_total", self.labels, key, self.help_text))
        return slot

    def family(self) -> Any:
        from prometheus_client.metrics_core import CounterMetricFamily

        family = CounterMetricFamily(self.name, self.help_text, labels=self.labels)
        for key, value in self.values.items():
            family.add_metric(key, value)
        return family


class Histogram:
    """A histogram family: per label values, the count of each bucket (not cumulative) and,
    last, the sum of what was observed."""

    def __init__(self, name: str, help_text: str, labels: Labels,
                 buckets: tuple[float, ...]) -> None:
        self.name = name
        self.help_text = help_text
        self.labels = labels
        self.bounds = (*buckets, math.inf)
        self.values: dict[Labels, list[float]] = {}  # in one process
        self._file: SlotFile | None = None  # with several workers
        self._slots: dict[Labels, tuple[int, ...]] = {}

    def share(self, shared: Shared) -> None:
        self._file = shared.file("histogram")

    def observe(self, key: Labels, amount: float) -> None:
        # The first bucket whose bound is at least `amount`, as the client library counts.
        index = bisect_left(self.bounds, amount)
        if self._file is None:
            counts = self.values.get(key)
            if counts is None:
                counts = self.values[key] = [0.0] * (len(self.bounds) + 1)
            counts[index] += 1
            counts[-1] += amount
            return
        slots = self._slots.get(key) or self._new_slots(key)
        view = self._file.view  # after the slots: a new entry may have moved the mapping
        view[slots[index]] += 1
        view[slots[-1]] += amount

    def _new_slots(self, key: Labels) -> tuple[int, ...]:
        """Every bucket's entry and the sum's, the empty buckets included (as the library)."""
        assert self._file is not None
        bucket_labels = (*self.labels, "le")
        slots = [self._file.slot(_key(self.name, f"{self.name}_bucket", bucket_labels,
                                      (*key, edge), self.help_text))
                 for edge in self._edges()]
        slots.append(self._file.slot(_key(self.name, f"{self.name}_sum", self.labels, key,
                                          self.help_text)))
        self._slots[key] = tuple(slots)
        return self._slots[key]

    @cache  # noqa: B019 - a few families, each living as long as the process
    def _edges(self) -> tuple[str, ...]:
        """The buckets' `le` labels, as the client library writes them."""
        from prometheus_client.utils import floatToGoString

        return tuple(floatToGoString(bound) for bound in self.bounds)  # type: ignore[no-untyped-call]

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
