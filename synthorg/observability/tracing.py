"""OpenTelemetry traces, exported over OTLP (http/protobuf) when, and only when, the standard
`OTEL_EXPORTER_OTLP_ENDPOINT` is set. Off, nothing of the SDK is imported and every hook is a
None check.

- Every request has trace ids from its first byte: a fresh trace id and its own span id.
  Once the gates admit the peer, the caller's W3C `traceparent` is honoured (a stranger
  cannot join or forge traces): the request takes the caller's trace id. Event lines written
  while it runs carry them, and its outbound calls send them on, recorded or not.
- Head sampling is decided by this module, once per request, before anything of the SDK is
  touched: a caller's sampled flag is followed; a trace this node starts is recorded at the
  ratio the standard variables ask for. A request not recorded makes no span object at all.
- A recorded request is a span (`a2a.inbound`, with the request's own ids and start); the
  gates and the rate limit are span events. A refused request is a span of its own, with the
  refusal as an event, never a child of the caller's trace.
- The handler (`a2a.handler`, from the method's parse to the answer), each task store call
  (`store.<operation>`) and each outbound call (`a2a.outbound`) are its children, and the
  outbound call carries `traceparent` to the peer, so a delegation A -> B -> C is one trace.
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, cast

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
# The request's trace id and its own span id, recorded or not: what its event lines carry
# and what its outbound calls send on. None outside a request.
# Kept as the hex an event line carries, formatted once per request rather than per line.
_ids: ContextVar[tuple[str, str] | None] = ContextVar("synthorg_trace_ids", default=None)
_TRACEPARENT = re.compile(rb"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_bits = random.getrandbits
_random = random.random


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

    # The head decision is made here, once per request (`Tracing`): a request not recorded
    # costs no SDK span at all. What reaches the SDK is recorded.
    _ratio = sample_ratio()
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}),
                              sampler=ParentBased(ALWAYS_ON),
                              id_generator=cast(Any, _id_generator))
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
    """The ids an event line carries: the current span's in a recorded trace, else the
    request's own (its trace, the caller's when the gates admitted one, and its span id, as
    sent on in `traceparent`); none outside a request."""
    if _attached.get():
        context = _trace.get_current_span().get_span_context()
        if context.is_valid:
            return format(context.trace_id, "032x"), format(context.span_id, "016x")
    return _ids.get()


def inject(headers: dict[str, str]) -> None:
    """Add `traceparent` (and `tracestate`) to outbound headers: the current span's in a
    recorded trace; else the request's ids with the sampled flag off, so the peers
    downstream record nothing either and their event lines carry the same trace id."""
    if _propagator is None:
        return
    if _attached.get() and _trace.get_current_span().get_span_context().is_valid:
        _propagator.inject(headers)
        return
    ids = _ids.get() or _hex(_bits(128) or 1, _bits(64) or 1)  # outside a request: fresh
    headers["traceparent"] = f"00-{ids[0]}-{ids[1]}-00"


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


def parse_traceparent(value: bytes) -> tuple[int, int, bool] | None:
    """(trace id, parent span id, sampled) of a W3C `traceparent`, or None when it is not
    one (a version this parser does not know is read as version 00 is, as the
    recommendation asks; all-zero ids and version ff are invalid)."""
    if len(value) < 55 or (len(value) > 55 and value[55:56] != b"-"):
        return None
    match = _TRACEPARENT.match(value[:55])
    if match is None or match.group(1) == b"ff" or (match.group(1) == b"00" and len(value) != 55):
        return None
    trace_id, parent_id = int(match.group(2), 16), int(match.group(3), 16)
    if not trace_id or not parent_id:
        return None
    return trace_id, parent_id, bool(int(match.group(4), 16) & 1)


def _caller(headers: Any) -> tuple[tuple[int, int, bool], dict[str, str]] | None:
    """The caller's trace context: its parsed `traceparent` and the raw carrier (with
    `tracestate`), or None when it sent no valid one."""
    parent = None
    carrier: dict[str, str] = {}
    for name, value in headers:
        if name == b"traceparent":
            parent = parse_traceparent(value)
            carrier["traceparent"] = value.decode("latin-1")
        elif name == b"tracestate":
            carrier["tracestate"] = value.decode("latin-1")
    return None if parent is None else (parent, carrier)


class _ClaimedIds:
    """The SDK's id generator, but the span a request starts takes the ids the request's
    event lines already carry (`claim`): a log line and the span join."""

    claim: tuple[int, int] | None = None

    def generate_trace_id(self) -> int:
        return self.claim[0] if self.claim is not None else (_bits(128) or 1)

    def generate_span_id(self) -> int:
        return self.claim[1] if self.claim is not None else (_bits(64) or 1)

    def is_trace_id_random(self) -> bool:
        return True


_id_generator = _ClaimedIds()


def _start(state: _Trace, name: str, context: Any, attributes: dict[str, Any]) -> Any:
    """The request's own span (inbound, or a refusal's), with the request's ids."""
    _id_generator.claim = (state.trace_id, state.span_id)
    try:
        return _tracer.start_span(name, context=context, kind=_trace.SpanKind.SERVER,
                                  start_time=state.start_ns, attributes=attributes)
    finally:
        _id_generator.claim = None


class Tracing:
    """The access observer that gives each request its trace ids and, when its trace is
    recorded, its spans. The unrecorded path (most requests under head sampling) touches
    nothing of the SDK: two random ids, a context variable, and the decision."""

    def started(self, record: RequestRecord) -> None:
        state = record.trace = _Trace(_bits(128) or 1, _bits(64) or 1, _head_sampled())
        state.ids_token = _ids.set(_hex(state.trace_id, state.span_id))

    def admitted(self, record: RequestRecord) -> None:
        state = record.trace
        if state is None or _tracer is None:
            return
        caller = _caller(record.headers)
        parent = None
        if caller is not None:  # the gates admitted it: the request joins the caller's trace
            (trace_id, _, sampled), carrier = caller
            state.trace_id, state.joined = trace_id, True
            _ids.set(_hex(trace_id, state.span_id))  # reset with the first token, at the end
            if not sampled:
                return  # follow the caller: nothing recorded, its trace id still passed on
            parent = _propagator.extract(carrier)
        elif not state.sampled:
            return  # nothing recorded; an outbound call still says so downstream (`inject`)
        state.start_ns = _start_ns(record)
        inbound = _start(state, "a2a.inbound", parent, _attributes(record))
        now = time.time_ns()
        for gate in _GATES:
            inbound.add_event(gate, {"result": "passed"}, timestamp=now)
        state.spans.append(inbound)
        state.tokens.append(_context.attach(_trace.set_span_in_context(inbound)))
        state.attached = _attached.set(True)

    def method(self, record: RequestRecord) -> None:
        state = record.trace
        if state is None or not state.spans:
            return
        handler = _tracer.start_span("a2a.handler", attributes={"rpc.method": record.method})
        state.spans.append(handler)
        state.tokens.append(_context.attach(_trace.set_span_in_context(handler)))

    def finished(self, record: RequestRecord) -> None:
        state = record.trace
        if state is None:
            return
        try:
            if state.spans or record.refusal is not None:
                self._end_spans(state, record)
        finally:
            for token in reversed(state.tokens):
                _context.detach(token)
            if state.attached is not None:
                _attached.reset(state.attached)
            if state.ids_token is not None:
                _ids.reset(state.ids_token)

    def _end_spans(self, state: _Trace, record: RequestRecord) -> None:
        if _tracer is None:
            return
        if not state.spans and not state.joined and state.sampled:
            # Refused by the gates: a trace of its own, never the caller's.
            state.start_ns = _start_ns(record)
            refused = _start(state, "a2a.inbound", None, _attributes(record))
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


def _hex(trace_id: int, span_id: int) -> tuple[str, str]:
    return format(trace_id, "032x"), format(span_id, "016x")


def _head_sampled() -> bool:
    return _ratio >= 1.0 or (_ratio > 0.0 and _random() < _ratio)


def _start_ns(record: RequestRecord) -> int:
    """The request's start on the wall clock (spans are made after it, if at all)."""
    return time.time_ns() - int((time.perf_counter() - record.started) * 1e9)


class _Trace:
    __slots__ = ("attached", "ids_token", "joined", "sampled", "span_id", "spans", "start_ns",
                 "tokens", "trace_id")

    def __init__(self, trace_id: int, span_id: int, sampled: bool) -> None:
        self.trace_id, self.span_id = trace_id, span_id
        self.sampled = sampled  # the head decision, for a trace this node starts
        self.joined = False  # the caller's trace, once the gates admitted it
        self.start_ns = 0
        self.spans: list[Any] = []
        self.tokens: list[Any] = []
        self.attached: Any = None  # the token of `_attached`, once a context is attached
        self.ids_token: Any = None  # the token of `_ids`


def _attributes(record: RequestRecord) -> dict[str, Any]:
    return {"http.request.method": record.http_method, "synthorg.operation": record.operation,
            "synthorg.dialect": record.dialect}
