"""Every call this node makes to a peer (delegation, card fetch): counted and timed into the
metrics, a span when traces are on, and `traceparent` on the wire. Off, each hook is a None
check."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from synthorg.observability import tracing

if TYPE_CHECKING:
    from synthorg.observability.metrics import Metrics

_metrics: Metrics | None = None


def set_metrics(metrics: Metrics | None) -> None:
    global _metrics
    _metrics = metrics


class Outcome:
    """What the caller says of the call before it ends: `ok` unless told otherwise."""

    __slots__ = ("result",)

    def __init__(self) -> None:
        self.result = "ok"


@contextmanager
def outbound_call(peer: str, kind: str) -> Iterator[Outcome]:
    """Around one call to `peer` (`kind`: the JSON-RPC method, or `card`). An exception that
    leaves it counts as `error` unless the caller set another result."""
    outcome = Outcome()
    started = time.perf_counter()
    try:
        with tracing.span("a2a.outbound", **{"synthorg.peer": peer, "rpc.method": kind}) as span:
            try:
                yield outcome
            except BaseException:
                if outcome.result == "ok":
                    outcome.result = "error"
                raise
            finally:
                if span is not None:
                    span.set_attribute("synthorg.result", outcome.result)
    finally:
        if _metrics is not None:
            _metrics.outbound(peer, kind, outcome.result, time.perf_counter() - started)


def trace_headers(headers: dict[str, str]) -> dict[str, str]:
    """`headers` with the current trace's `traceparent` added (unchanged when traces are off)."""
    if tracing.enabled():
        tracing.inject(headers)
    return headers
