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
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from synthorg.observability import log
from synthorg.observability.access import RequestRecord

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
_GATES = ("gate.peer_name", "gate.allowlist", "gate.credential")

_tracer: Any = None  # the SDK's tracer once configured; None: tracing is off
_propagator: Any = None


def enabled() -> bool:
    return _tracer is not None


def configure(service_name: str) -> bool:
    """Turn tracing on for this process if an OTLP endpoint is set; True when on."""
    global _tracer, _propagator
    if _tracer is not None:
        return True
    if not (os.environ.get(ENDPOINT_ENV) or os.environ.get(TRACES_ENDPOINT_ENV)):
        return False
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _tracer = provider.get_tracer("synthorg")
    _propagator = TraceContextTextMapPropagator()
    log.set_trace_ids(current_ids)
    return True


def shutdown() -> None:
    """Flush what is queued (at a clean stop)."""
    if _tracer is None:
        return
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    flush = getattr(provider, "force_flush", None)
    if flush is not None:
        flush()


def current_ids() -> tuple[str, str] | None:
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def inject(headers: dict[str, str]) -> None:
    """Add `traceparent` (and `tracestate`) for the current span to outbound headers."""
    if _propagator is not None:
        _propagator.inject(headers)


@contextmanager
def span(name: str, **attributes: Any) -> Iterator[Any]:
    """A child span of the current one (a no-op when tracing is off)."""
    if _tracer is None:
        yield None
        return
    with _tracer.start_as_current_span(name, attributes=attributes) as current:
        yield current


class Tracing:
    """The access observer that makes the inbound request's spans."""

    def started(self, record: RequestRecord) -> None:
        record.trace = _Trace(time.time_ns())

    def admitted(self, record: RequestRecord) -> None:
        state = record.trace
        if state is None or _tracer is None:
            return
        from opentelemetry import context as otel_context
        from opentelemetry import trace

        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in record.headers
                   if k in (b"traceparent", b"tracestate")}
        parent = _propagator.extract(carrier) if carrier else None
        inbound = _tracer.start_span("a2a.inbound", context=parent,
                                     kind=trace.SpanKind.SERVER, start_time=state.start_ns,
                                     attributes=_attributes(record))
        now = time.time_ns()
        for gate in _GATES:
            inbound.add_event(gate, {"result": "passed"}, timestamp=now)
        state.spans.append(inbound)
        state.tokens.append(otel_context.attach(trace.set_span_in_context(inbound)))

    def method(self, record: RequestRecord) -> None:
        state = record.trace
        if state is None or _tracer is None or not state.spans:
            return
        from opentelemetry import context as otel_context
        from opentelemetry import trace

        handler = _tracer.start_span("a2a.handler", attributes={"rpc.method": record.method})
        state.spans.append(handler)
        state.tokens.append(otel_context.attach(trace.set_span_in_context(handler)))

    def finished(self, record: RequestRecord) -> None:
        state = record.trace
        if state is None or _tracer is None:
            return
        from opentelemetry import context as otel_context
        from opentelemetry import trace

        if not state.spans:  # refused before admission: a span of its own, not the caller's
            refused = _tracer.start_span("a2a.inbound", kind=trace.SpanKind.SERVER,
                                         start_time=state.start_ns,
                                         attributes=_attributes(record))
            refused.add_event("gate.refused", {"reason": record.refusal or "unknown"})
            state.spans.append(refused)
        if record.refusal is not None and len(state.spans) == 1:
            state.spans[0].add_event("refused", {"reason": record.refusal})
        for current in reversed(state.spans):
            current.set_attribute("http.response.status_code", record.status)
            if record.method is not None:
                current.set_attribute("rpc.method", record.method)
            if record.peer is not None:
                current.set_attribute("synthorg.peer", record.peer)
            current.end()
        for token in reversed(state.tokens):
            otel_context.detach(token)


class _Trace:
    __slots__ = ("spans", "start_ns", "tokens")

    def __init__(self, start_ns: int) -> None:
        self.start_ns = start_ns
        self.spans: list[Any] = []
        self.tokens: list[Any] = []


def _attributes(record: RequestRecord) -> dict[str, Any]:
    return {"http.request.method": record.http_method, "synthorg.operation": record.operation,
            "synthorg.dialect": record.dialect}
