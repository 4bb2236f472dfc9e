"""What this process saw of its traffic lately, for the operator console: an access observer.

Two things, both in memory and bounded, both this process's alone (each worker or replica
keeps its own):

- per peer: when it last reached this node and how many of its requests were refused before
  the handler (at most `MAX_PEERS` names, the least recently seen dropped first);
- a ring of `SAMPLES` samples, one per `INTERVAL` seconds: requests answered, refusals by
  reason, and the latency sum and maximum, from which the overview draws its charts. The
  samples cost one addition per request and are kept whether or not /metrics is on.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from synthorg.observability.access import RequestRecord

INTERVAL = 10.0  # seconds per sample
SAMPLES = 60  # ten minutes
MAX_PEERS = 1024
MAX_REASONS = 64


def _iso(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class _Sample:
    start: float  # wall clock, a multiple of INTERVAL
    requests: int = 0
    refusals: dict[str, int] = field(default_factory=dict)
    latency_sum: float = 0.0
    latency_max: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "at": _iso(self.start),
            "requests": self.requests,
            "refusals": dict(self.refusals),
            "latencyMeanMs": round(self.latency_sum / self.requests * 1000, 3)
            if self.requests else 0.0,
            "latencyMaxMs": round(self.latency_max * 1000, 3),
        }


@dataclass
class _Peer:
    last_contact: float  # wall clock
    refusals: int = 0


class Activity:
    """The access observer (synthorg.observability.access.Observer) keeping both."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._samples: deque[_Sample] = deque(maxlen=SAMPLES)
        self._peers: OrderedDict[str, _Peer] = OrderedDict()

    def started(self, record: RequestRecord) -> None:
        pass

    def admitted(self, record: RequestRecord) -> None:
        pass

    def method(self, record: RequestRecord) -> None:
        pass

    def finished(self, record: RequestRecord) -> None:
        now = self._clock()
        sample = self._sample(now)
        sample.requests += 1
        sample.latency_sum += record.duration
        sample.latency_max = max(sample.latency_max, record.duration)
        if record.refusal is not None and (
                record.refusal in sample.refusals or len(sample.refusals) < MAX_REASONS):
            sample.refusals[record.refusal] = sample.refusals.get(record.refusal, 0) + 1
        if record.peer is not None:
            peer = self._peers.get(record.peer)
            if peer is None:
                peer = self._peers[record.peer] = _Peer(now)
                if len(self._peers) > MAX_PEERS:
                    self._peers.popitem(last=False)
            else:
                peer.last_contact = now
                self._peers.move_to_end(record.peer)
            if record.refusal is not None:
                peer.refusals += 1

    def _sample(self, now: float) -> _Sample:
        start = now - now % INTERVAL
        if not self._samples or self._samples[-1].start < start:
            self._samples.append(_Sample(start))
        return self._samples[-1]

    def samples(self) -> dict[str, Any]:
        """A MetricsSamples document: the last samples, oldest first, empty intervals as
        zeros up to now."""
        now = self._clock()
        current = now - now % INTERVAL
        by_start = {sample.start: sample for sample in self._samples}
        first = current - (SAMPLES - 1) * INTERVAL
        rows = [(by_start.get(first + i * INTERVAL) or _Sample(first + i * INTERVAL)).to_json()
                for i in range(SAMPLES)]
        return {"intervalSeconds": INTERVAL, "samples": rows}

    def peer(self, name: str) -> tuple[str | None, int]:
        """(last contact, ISO-8601 UTC or None; refusals) as this process saw them."""
        peer = self._peers.get(name)
        if peer is None:
            return None, 0
        return _iso(peer.last_contact), peer.refusals
