"""OpenTelemetry traces, exported over OTLP (http/protobuf) when, and only when, the standard
`OTEL_EXPORTER_OTLP_ENDPOINT` is set. Off, nothing of the SDK is imported and every hook is a
None check.

- The inbound request is a span (`a2a.inbound`), started when the gates admit the peer: only
  then is the caller's W3C `traceparent` honoured (a stranger cannot join or forge traces). Its
  start is the request's own; the gates and the rate limit are span events. A refused request
  is a span of its own, with the refusal as an event, never a child of the caller's trace.
- The handler (`a2a.handler`, from the method's parse to the answer), each task store call
  (`store.<operation>`) and each outbound call (`a2a.outbound`) are its children, and the
  outbound call carries `traceparent` to the peer, so a delegation A -> B -> C is one trace.
- Every event line written inside a span carries its `trace_id` and `span_id`.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from synthorg.observability import log
from synthorg.observability.access import RequestRecord

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
SAMPLER_ENV, SAMPLER_ARG_ENV = "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"
_GATES = ("gate.peer_name", "gate.allowlist", "gate.credential")

_tracer: Any = None  # the SDK's tracer once configured; None: tracing is off
_propagator: Any = None
_trace: Any = None  # opentelemetry.trace and .context, bound once tracing is on
_context: Any = None
_ratio = 1.0  # the share of traces this node starts that are recorded
# Whether this request attached a trace context: a context variable read is far cheaper than
# asking OpenTelemetry's context, and most requests of a sampled node attach none.
_attached: ContextVar[bool] = ContextVar("synthorg_trace_attached", default=False)


def sample_ratio(environ: dict[str, str] | None = None) -> float:
    """The head-sampling ratio the standard variables ask for: `traceidratio` and
    `parentbased_traceidratio` take OTEL_TRACES_SAMPLER_ARG (default 1.0), `always_off`
    and `parentbased_always_off` record nothing, anything else everything. A caller's
    sampled flag is always followed (parent-based)."""
    env = os.environ if environ is None else environ
    sampler = (env.get(SAMPLER_ENV) or "parentbased_always_on").strip().lower()
    if sampler.endswith("always_off"):
        return 0.0
    if sampler.endswith("traceidratio"):
        try:
            return min(1.0, max(0.0, float(env.get(SAMPLER_ARG_ENV) or 1.0)))
        except ValueError:
            return 1.0
    return 1.0


def enabled() -> bool:
    return _tracer is not None


def configure(service_name: str) -> bool:
    """Turn tracing on for this process if an OTLP endpoint is set; True when on."""
    global _tracer, _propagator, _trace, _context, _ratio
    if _tracer is not None:
        return True
    if not (os.environ.get(ENDPOINT_ENV) or os.environ.get(TRACES_ENDPOINT_ENV)):
        return False
    from opentelemetry import context, trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    # The head decision is made here, once per request (`Tracing.admitted`): a request not
    # recorded costs no SDK span at all. What reaches the SDK is recorded.
    _ratio = sample_ratio()
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}),
                              sampler=ParentBased(ALWAYS_ON))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _trace, _context = trace, context
    _tracer = provider.get_tracer("synthorg")
    _propagator = TraceContextTextMapPropagator()
    log.set_trace_ids(current_ids)
    return True


def shutdown() -> None:
    """Flush what is queued (at a clean stop)."""
    if _tracer is None:
        return
    flush = getattr(_trace.get_tracer_provider(), "force_flush", None)
    if flush is not None:
        flush()


def current_ids() -> tuple[str, str] | None:
    """The current span's ids, for event lines (none outside a span)."""
    if not _attached.get():
        return None
    context = _trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def inject(headers: dict[str, str]) -> None:
    """Add `traceparent` (and `tracestate`) to outbound headers: the current span's, or, in
    a request whose trace is not recorded, a fresh one that says so (sampled flag off)."""
    if _propagator is None:
        return
    if _attached.get() and _trace.get_current_span().get_span_context().is_valid:
        _propagator.inject(headers)
    else:
        headers["traceparent"] = (f"00-{random.getrandbits(128) or 1:032x}-"
                                  f"{random.getrandbits(64) or 1:016x}-00")


def recording() -> bool:
    """Whether the current trace is recorded (spans made now would be exported). Asked of
    the trace, not the span: work a request left running (a forwarded task followed in the
    background) goes on adding children to its trace after the request's own spans ended."""
    return (_tracer is not None and _attached.get()
            and bool(_trace.get_current_span().get_span_context().trace_flags.sampled))


@contextmanager
def span(name: str, **attributes: Any) -> Iterator[Any]:
    """A child span of the current one; a no-op when tracing is off or the current trace
    is not recorded."""
    if not recording():
        yield None
        return
    with _tracer.start_as_current_span(name, attributes=attributes) as current:
        yield current


def _caller(headers: Any) -> Any:
    """The caller's trace context from `traceparent`/`tracestate`, or None."""
    carrier = None
    for name, value in headers:
        if name == b"traceparent" or name == b"tracestate":
            carrier = carrier or {}
            carrier[name.decode("latin-1")] = value.decode("latin-1")
    return None if carrier is None else _propagator.extract(carrier)


def _head_sampled() -> bool:
    return _ratio >= 1.0 or (_ratio > 0.0 and random.random() < _ratio)


class Tracing:
    """The access observer that makes the inbound request's spans."""

    def started(self, record: RequestRecord) -> None:
        record.trace = _Trace(time.time_ns())

    def admitted(self, record: RequestRecord) -> None:
        state = record.trace
        if state is None or _tracer is None:
            return
        parent = _caller(record.headers)
        remote = None if parent is None else _trace.get_current_span(parent).get_span_context()
        if remote is not None and remote.is_valid:
            if not remote.trace_flags.sampled:  # follow the caller: pass its trace on, unrecorded
                state.tokens.append(_context.attach(parent))
                state.attached = _attached.set(True)
                return
        elif not _head_sampled():
            return  # nothing recorded; an outbound call still says so downstream (`inject`)
        inbound = _tracer.start_span("a2a.inbound", context=parent,
                                     kind=_trace.SpanKind.SERVER, start_time=state.start_ns,
                                     attributes=_attributes(record))
        now = time.time_ns()
        for gate in _GATES:
            inbound.add_event(gate, {"result": "passed"}, timestamp=now)
        state.spans.append(inbound)
        state.tokens.append(_context.attach(_trace.set_span_in_context(inbound)))
        state.attached = _attached.set(True)

    def method(self, record: RequestRecord) -> None:
        state = record.trace
        if state is None or _tracer is None or not state.spans:
            return
        handler = _tracer.start_span("a2a.handler", attributes={"rpc.method": record.method})
        state.spans.append(handler)
        state.tokens.append(_context.attach(_trace.set_span_in_context(handler)))

    def finished(self, record: RequestRecord) -> None:
        state = record.trace
        if state is None or _tracer is None:
            return
        if not state.spans and not state.tokens and record.refusal is not None \
                and _head_sampled():
            # Refused by the gates: a trace of its own, never the caller's.
            refused = _tracer.start_span("a2a.inbound", kind=_trace.SpanKind.SERVER,
                                         start_time=state.start_ns,
                                         attributes=_attributes(record))
            refused.add_event("gate.refused", {"reason": record.refusal})
            state.spans.append(refused)
        elif record.refusal is not None and state.spans:  # e.g. the rate limit, after the gates
            state.spans[0].add_event("refused", {"reason": record.refusal})
        for current in reversed(state.spans):
            current.set_attribute("http.response.status_code", record.status)
            if record.method is not None:
                current.set_attribute("rpc.method", record.method)
            if record.peer is not None:
                current.set_attribute("synthorg.peer", record.peer)
            current.end()
        for token in reversed(state.tokens):
            _context.detach(token)
        if state.attached is not None:
            _attached.reset(state.attached)


class _Trace:
    __slots__ = ("attached", "spans", "start_ns", "tokens")

    def __init__(self, start_ns: int) -> None:
        self.start_ns = start_ns
        self.spans: list[Any] = []
        self.tokens: list[Any] = []
        self.attached: Any = None  # the token of `_attached`, once a context is attached


def _attributes(record: RequestRecord) -> dict[str, Any]:
    return {"http.request.method": record.http_method, "synthorg.operation": record.operation,
            "synthorg.dialect": record.dialect}
