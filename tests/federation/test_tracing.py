"""One delegation across three nodes, A -> B -> C, is one trace: each node exports its spans
over OTLP (http/protobuf) to a receiver in this test, which decodes them with the protocol's
own protobuf types. The caller's traceparent is honoured once the gates admit it, and only
then; every event line inside a span carries its trace_id and span_id. A delegation no node
records still passes its trace id on, and its event lines carry it."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.federation.harness import FedNode, link, running
from tests.integration.helpers import envelope, message

DEADLINE = 30.0
TRACE_ID = secrets.token_hex(16)
PARENT_ID = secrets.token_hex(8)


class Receiver:
    """An OTLP/HTTP traces endpoint on loopback: every span it was sent, decoded."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                receiver.add(request)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def add(self, request: ExportTraceServiceRequest) -> None:
        found = []
        for resource_spans in request.resource_spans:
            service = next(a.value.string_value for a in resource_spans.resource.attributes
                           if a.key == "service.name")
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append({
                        "service": service, "name": span.name,
                        "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                        "parent_id": span.parent_span_id.hex(),
                        "events": [e.name for e in span.events],
                    })
        with self.changed:
            self.spans.extend(found)
            self.changed.notify_all()

    def wait_for(self, predicate: Any) -> list[dict[str, Any]]:
        with self.changed:
            assert self.changed.wait_for(lambda: predicate(self.spans), DEADLINE), "\n".join(
                f"{s['service']} {s['name']} {s['trace_id']} {s['span_id']} {s['parent_id']}"
                for s in self.spans)
            return list(self.spans)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    found.thread.start()
    yield found
    found.server.shutdown()


def test_a_delegation_across_three_nodes_is_one_trace(tmp_path: Path,
                                                      receiver: Receiver) -> None:
    a = FedNode(tmp_path, "node-a", ["client", "node-b"], {"fwd": "node-b/fwd"})
    b = FedNode(tmp_path, "node-b", ["node-a", "node-c"], {"fwd": "node-c/echo"})
    c = FedNode(tmp_path, "node-c", ["node-b"], {"echo": "echo"})
    for node in (a, b, c):
        node.env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
                         "OTEL_BSP_SCHEDULE_DELAY": "100"})
    client_key = secrets.token_urlsafe(24)
    with running(a, b, c):
        link(a, b)  # once each listens: the records hold their ports
        link(b, c)
        a.add_peer("client", "http://127.0.0.1:9", client_key)
        headers = {"X-A2A-Peer-Name": "client", "X-API-Key": client_key,
                   "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
        with httpx.Client(base_url=a.url, headers=headers, timeout=30) as client:
            sent = client.post("/api/v1/a2a/agents/fwd/",
                               json=envelope("message/send", {"message": message("hello")}))
            assert sent.status_code == 200, sent.text
            assert sent.json()["result"]["status"]["state"] == "completed", sent.text
            # A stranger's traceparent is not honoured: its refusal is a trace of its own.
            stranger = {**headers, "X-A2A-Peer-Name": "stranger"}
            assert client.post("/api/v1/a2a/", headers=stranger,
                               json=envelope("tasks/get", {"id": "x"})).status_code == 403

        expected = {(service, name) for service in ("node-a", "node-b", "node-c")
                    for name in ("a2a.inbound", "a2a.handler", "store.create")}
        expected |= {("node-a", "a2a.outbound"), ("node-b", "a2a.outbound")}

        def complete(spans: list[dict[str, Any]]) -> bool:
            ours = {(s["service"], s["name"]) for s in spans if s["trace_id"] == TRACE_ID}
            refused = [s for s in spans if "gate.refused" in s["events"]]
            return expected <= ours and bool(refused)

        receiver.wait_for(complete)
        events_b = b.events("a2a.inbound.received")
        # A follows its forwarded task with calls of its own to B, in the same trace: wait
        # for the spans of every request B logged.
        logged = {e["span_id"] for e in events_b}
        spans = receiver.wait_for(lambda spans: complete(spans) and logged <= {
            s["span_id"] for s in spans if s["trace_id"] == TRACE_ID})

    ours = [s for s in spans if s["trace_id"] == TRACE_ID]
    # The trace hangs together: A's inbound span is the caller's child, and every other span
    # has its parent in the trace.
    by_id = {s["span_id"]: s for s in ours}
    roots = [s for s in ours if s["parent_id"] not in by_id]
    assert [(r["service"], r["name"], r["parent_id"]) for r in roots] == [
        ("node-a", "a2a.inbound", PARENT_ID)]
    inbound_a = next(s for s in ours if s["service"] == "node-a" and s["name"] == "a2a.inbound")
    assert {"gate.peer_name", "gate.allowlist", "gate.credential"} <= set(inbound_a["events"])
    refused = next(s for s in spans if "gate.refused" in s["events"])
    assert refused["trace_id"] != TRACE_ID and refused["parent_id"] == ""
    # Log lines join the trace.
    assert events_b and all(e["trace_id"] == TRACE_ID and e["span_id"] in by_id
                            for e in events_b)


def test_an_unrecorded_delegation_still_carries_its_trace_id(tmp_path: Path,
                                                             receiver: Receiver) -> None:
    """The caller's trace is not sampled (flag 00) and the nodes record none of their own
    (ratio 0): no span is exported, yet every event line of the delegation on B and C carries
    the caller's trace id, passed on in traceparent with the sampled flag still off."""
    a = FedNode(tmp_path, "node-a", ["client", "node-b"], {"fwd": "node-b/fwd"})
    b = FedNode(tmp_path, "node-b", ["node-a", "node-c"], {"fwd": "node-c/echo"})
    c = FedNode(tmp_path, "node-c", ["node-b"], {"echo": "echo"})
    for node in (a, b, c):
        node.env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
                         "OTEL_BSP_SCHEDULE_DELAY": "100",
                         "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
                         "OTEL_TRACES_SAMPLER_ARG": "0"})
    client_key = secrets.token_urlsafe(24)
    unsampled = secrets.token_hex(16)
    with running(a, b, c):
        link(a, b)
        link(b, c)
        a.add_peer("client", "http://127.0.0.1:9", client_key)
        headers = {"X-A2A-Peer-Name": "client", "X-API-Key": client_key,
                   "traceparent": f"00-{unsampled}-{PARENT_ID}-00"}
        with httpx.Client(base_url=a.url, headers=headers, timeout=30) as client:
            sent = client.post("/api/v1/a2a/agents/fwd/",
                               json=envelope("message/send", {"message": message("hello")}))
            assert sent.status_code == 200, sent.text
            assert sent.json()["result"]["status"]["state"] == "completed", sent.text
            # A request the gates refuse has ids of its own, never the caller's.
            stranger = {**headers, "X-A2A-Peer-Name": "stranger"}
            assert client.post("/api/v1/a2a/", headers=stranger,
                               json=envelope("tasks/get", {"id": "x"})).status_code == 403

    # Read once the nodes stopped: every line they wrote is in (a request's last line, its
    # access event, is written after its answer).
    completed = {node.name: node.events("a2a.inbound.completed") for node in (a, b, c)}
    refusals = a.events("a2a.inbound.auth_failed")
    # B's and C's JSON-RPC requests are the delegation's (their card reads are `link`'s).
    for name in ("node-b", "node-c"):
        lines = [e for e in completed[name] if e["method"] is not None]
        assert lines and all(e["trace_id"] == unsampled for e in lines), (name, lines)
        assert all(len(e["span_id"]) == 16 and e["span_id"] != PARENT_ID for e in lines)
    assert [e["trace_id"] for e in completed["node-a"] if e["status"] == 200] == [unsampled]
    refused = [e for e in completed["node-a"] if e["status"] == 403]
    assert refused and refused[0]["trace_id"] != unsampled
    assert refusals and refusals[-1]["trace_id"] == refused[0]["trace_id"]
    assert not receiver.spans  # nothing recorded on any node
