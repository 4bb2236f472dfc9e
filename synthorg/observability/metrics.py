"""Prometheus metrics, correct across the workers of one node.

A request adds to plain per-process counters and histogram buckets (`tally.py`: no lock, no
system call); a scrape folds them into the Prometheus families (prometheus-client renders
them). With several workers, `serve` points `PROMETHEUS_MULTIPROC_DIR` at a fresh directory
before it starts them (`prepare_multiprocess`); each worker keeps its numbers in
memory-mapped files there, in the client library's format, and a scrape, answered by
whichever worker the kernel hands the connection to, sums every worker's files
(`MultiProcessCollector`). prometheus_client is imported only when /metrics is scraped (and
for its file keys, when a worker first counts a series).

Label values are bounded: an operation, method, dialect or refusal reason the node does not
know is `other`, and so is a peer outside the allowlist.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from functools import cache
from pathlib import Path
from typing import Any

from synthorg.dialects.objects import counts_v03
from synthorg.observability.access import OTHER, RequestRecord
from synthorg.observability.log import dropped_lines, watch_dropped_lines
from synthorg.observability.tally import Counter, Histogram, Shared

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                   5.0, 10.0)
NO_METHOD = "none"  # requests that never named a JSON-RPC method (refusals, cards, admin)

# Every reason the gateway gives for a refusal before the handler (gates.py, endpoint.py).
REFUSAL_REASONS = frozenset({
    "missing_peer_name", "invalid_peer_name", "peer_not_allowed", "no_credential_record",
    "blank_stored_secret", "unknown_scheme", "missing_credential", "credential_mismatch",
    "admin_token_presented", "catalog_error", "record_undecryptable", "gate_error",
    "method_not_allowed",
    "invalid_content_length", "body_too_large", "body_too_large_streamed",
    "unsupported_media_type", "unknown_agent", "rate_limited",
})
PUSH_RESULTS = frozenset({"delivered", "retry", "failed"})


def prepare_multiprocess() -> Path:
    """Before the workers start: a fresh, empty directory for their values (an operator's own
    `PROMETHEUS_MULTIPROC_DIR` is emptied and used), set in the environment they inherit."""
    chosen = os.environ.get(MULTIPROC_ENV)
    if chosen:
        path = Path(chosen)
        if path.is_dir():
            for child in path.iterdir():
                if child.suffix == ".db":
                    child.unlink()
        path.mkdir(parents=True, exist_ok=True)
    else:
        path = Path(tempfile.mkdtemp(prefix="synthorg-metrics-"))
    os.environ[MULTIPROC_ENV] = str(path)
    return path


def cleanup_multiprocess(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


class _Families:
    """The metric families, once per process (every node of the process counts into them)."""

    def __init__(self) -> None:
        self.requests = Counter(
            "synthorg_requests", "HTTP requests answered, by operation, JSON-RPC method, "
            "dialect and status.", ("operation", "method", "dialect", "status"))
        self.refusals = Counter(
            "synthorg_gate_refusals", "Requests refused before the handler, by reason.",
            ("reason",))
        self.latency = Histogram(
            "synthorg_request_duration_seconds", "Time to answer a request, by JSON-RPC "
            "method (none: no method was read).", ("method",), LATENCY_BUCKETS)
        self.outbound = Counter(
            "synthorg_outbound_calls", "Calls this node made to peers, by peer, kind and "
            "result.", ("peer", "kind", "result"))
        self.outbound_latency = Histogram(
            "synthorg_outbound_call_duration_seconds", "Time of calls to peers, by kind.",
            ("kind",), LATENCY_BUCKETS)
        self.store = Histogram(
            "synthorg_store_call_duration_seconds", "Time of task store calls, by operation.",
            ("operation",), LATENCY_BUCKETS)
        self.push = Counter(
            "synthorg_push_deliveries", "Push delivery attempts, by result (delivered, "
            "retry: failed and scheduled again, failed: given up).", ("result",))
        self.dropped_lines = Counter(
            "synthorg_event_lines_dropped", "Event lines not written because stderr did not "
            "take them (its buffer was full).")
        self.all: tuple[Counter | Histogram, ...] = (
            self.requests, self.refusals, self.latency, self.outbound, self.outbound_latency,
            self.store, self.push, self.dropped_lines)
        self.shared: Shared | None = None
        directory = os.environ.get(MULTIPROC_ENV)
        if directory:  # several workers: each one's values in its files, summed at a scrape
            self.shared = Shared(directory)
            for family in self.all:
                family.share(self.shared)
        self.count_dropped_lines()
        watch_dropped_lines(lambda _: self.count_dropped_lines())  # (rare) as they happen

    def count_dropped_lines(self) -> None:
        self.dropped_lines.set_total((), dropped_lines())

    def collect(self) -> Iterable[Any]:
        """This process's values as Prometheus families (the registry's collector)."""
        self.count_dropped_lines()
        return [family.family() for family in self.all]


@cache
def families() -> _Families:
    return _Families()


class Metrics:
    """The access observer that counts and times requests, and the scrape's renderer."""

    def __init__(self, allowed_peers: frozenset[str],
                 count_tasks: Callable[[], Awaitable[dict[str, int]]] | None = None,
                 outbox_depth: Callable[[], Awaitable[int]] | None = None) -> None:
        self.allowed_peers = allowed_peers
        self._count_tasks = count_tasks
        self._outbox_depth = outbox_depth
        self._families = families()

    def peer_label(self, peer: str | None) -> str:
        return peer if peer is not None and peer in self.allowed_peers else OTHER

    def started(self, record: RequestRecord) -> None:
        pass

    def admitted(self, record: RequestRecord) -> None:
        pass

    def method(self, record: RequestRecord) -> None:
        pass

    def finished(self, record: RequestRecord) -> None:
        families = self._families
        method = record.method or NO_METHOD
        families.requests.inc((record.operation, method, record.dialect, str(record.status)))
        families.latency.observe((method,), record.duration)
        if record.refusal is not None:
            reason = record.refusal if record.refusal in REFUSAL_REASONS else OTHER
            families.refusals.inc((reason,))

    def outbound(self, peer: str, kind: str, result: str, seconds: float) -> None:
        families = self._families
        families.outbound.inc((self.peer_label(peer), kind, result))
        families.outbound_latency.observe((kind,), seconds)

    def store_call(self, operation: str, seconds: float) -> None:
        self._families.store.observe((operation,), seconds)

    def push_result(self, result: str) -> None:
        """One push delivery attempt ended: delivered, retry or failed."""
        self._families.push.inc((result if result in PUSH_RESULTS else OTHER,))

    async def render(self) -> bytes:
        """The text format: every worker's values (summed) and the tasks by state, now."""
        from prometheus_client import CollectorRegistry, generate_latest

        families = self._families
        registry = CollectorRegistry(auto_describe=False)
        if families.shared is not None:
            from prometheus_client.multiprocess import MultiProcessCollector

            families.count_dropped_lines()
            MultiProcessCollector(registry, families.shared.directory)  # type: ignore[no-untyped-call]
        else:
            registry.register(families)
        text = generate_latest(registry)
        if self._count_tasks is not None:
            # The label values name 0.3's states, as operators' dashboards match them.
            text += _tasks_text(counts_v03(await self._count_tasks()))
        if self._outbox_depth is not None:
            text += _gauge_text("synthorg_push_outbox_depth", "Push deliveries owed (not yet "
                                "delivered nor given up), in the store.",
                                await self._outbox_depth())
        return text


def _gauge_text(name: str, help_text: str, value: int) -> bytes:
    """One gauge read from the store at scrape time (one query, by one worker)."""
    return f"# HELP {name} {help_text}\n# TYPE {name} gauge\n{name} {value}\n".encode()


def _tasks_text(counts: dict[str, int]) -> bytes:
    """The tasks gauge, read from the store at scrape time (one query, by one worker)."""
    from typing import get_args

    from synthorg.generated.models import TaskState

    lines = ["# HELP synthorg_tasks Tasks in the store, by state.", "# TYPE synthorg_tasks gauge"]
    for state in get_args(TaskState):
        lines.append(f'synthorg_tasks{{state="{state}"}} {counts.get(state, 0)}')
    return ("\n".join(lines) + "\n").encode()


class TimedStore:
    """A task store whose coroutine methods are timed into the store latency histogram."""

    def __init__(self, store: Any, metrics: Metrics | None,
                 span: Callable[[str], Any] | None = None) -> None:
        self._store = store
        self._metrics = metrics
        self._span = span  # the tracer's span factory for store calls, if traces are on

    def __getattr__(self, name: str) -> Any:
        # Only for a name not yet wrapped: a wrapped method is kept on the instance, so
        # later calls find it without coming here.
        target = getattr(self._store, name)
        if not callable(target) or name.startswith("_") or not _is_coroutine(target):
            return target
        wrapped = self._timed(name, target)
        setattr(self, name, wrapped)
        return wrapped

    def _timed(self, name: str, target: Callable[..., Awaitable[Any]]) -> Any:
        metrics, span = self._metrics, self._span

        from synthorg.observability.tracing import recording

        if metrics is None:
            # Traced only: a call outside a recorded trace is the store's own coroutine,
            # with no frame of ours around it.
            async def traced(*args: Any, **kwargs: Any) -> Any:
                with span(name):  # type: ignore[misc]
                    return await target(*args, **kwargs)

            def call(*args: Any, **kwargs: Any) -> Awaitable[Any]:
                return traced(*args, **kwargs) if recording() else target(*args, **kwargs)

            return call

        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                if span is None or not recording():
                    return await target(*args, **kwargs)
                with span(name):
                    return await target(*args, **kwargs)
            finally:
                metrics.store_call(name, time.perf_counter() - started)

        return timed


def _is_coroutine(target: Any) -> bool:
    import inspect

    return inspect.iscoroutinefunction(target)


class MetricsRoute:
    """What GET /metrics serves (None: metrics off), and who may read it."""

    def __init__(self, metrics: Metrics | None, public: bool,
                 authorized: Callable[[bytes], bool]) -> None:
        self._metrics = metrics
        self._public = public
        # AdminToken.matches_authorization (constant time): given by the node, so this
        # module needs nothing of the admin package.
        self._authorized = authorized

    async def render(self) -> bytes | None:
        return None if self._metrics is None else await self._metrics.render()

    def admits(self, scope: MutableMapping[str, Any]) -> bool:
        if self._public:
            return True
        values = [v for k, v in scope["headers"] if k.lower() == b"authorization"]
        return len(values) == 1 and self._authorized(values[0])


def parse(text: str) -> Iterable[Any]:
    """The families of a scrape, with the library's own parser (for tests and tools)."""
    from prometheus_client.parser import text_string_to_metric_families

    return text_string_to_metric_families(text)
