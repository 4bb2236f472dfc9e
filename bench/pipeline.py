"""Per-request cost of the inbound pipeline, as ratios against baselines in the same run.

Calls go straight into the ASGI apps (no sockets), so what is measured is this code, not the
network: a plain Starlette route answering the same JSON is the floor, and the pydantic
validation of one params object shows what the contract itself costs.

Event lines go where a served node's go: `configure_logging` on a stderr that is a pipe,
which a thread of this process drains. Two rows isolate the observability of a request: its
event lines alone (an access event and one more, then the loop's turn ends) and its metrics
alone (the access observer's counter and histogram, and one store call's histogram).
`--metrics-dir` runs with the metrics of several workers (PROMETHEUS_MULTIPROC_DIR); each
case runs `--rounds` times in a fresh order each round, and the medians are reported.

    .venv/bin/python -m bench.pipeline [--requests N] [--rounds R] [--metrics-dir]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from bench.rounds import shuffled_rounds
from synthorg.gateway.dispatch import PARAMS_ADAPTER
from synthorg.node import Node
from synthorg.observability import log
from synthorg.observability.access import RequestRecord
from synthorg.observability.events.a2a import INBOUND_COMPLETED
from synthorg.observability.metrics import Metrics

PEER, SECRET = "bench-peer", "bench-link-secret-0123456789"
HEADERS = [
    (b"content-type", b"application/json"),
    (b"x-a2a-peer-name", PEER.encode()),
    (b"x-api-key", SECRET.encode()),
]


def envelope(method: str, params: dict[str, Any], request_id: int) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    ).encode()


V1_HEADER = (b"a2a-version", b"1.0")


async def call(app: Any, path: str, body: bytes, *extra: tuple[bytes, bytes],
               headers: list[tuple[bytes, bytes]] = HEADERS) -> int:
    """One request through an ASGI app (`headers`, then `extra`); returns the status."""
    sent = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [*headers, *extra, (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    await app(scope, receive, send)
    return status


async def timed(label: str, n: int, one: Callable[[int], Awaitable[int]]) -> tuple[float, float]:
    """µs per request: wall time, and CPU time of this (the event loop's) thread, which other
    work on the machine does not inflate and another thread's (the event line writer's) work
    is not part of."""
    for i in range(min(200, n)):  # warm up
        assert await one(i) == 200, label
    start, cpu = time.perf_counter(), time.thread_time()
    for i in range(n):
        await one(i)
    return (time.perf_counter() - start) / n * 1e6, (time.thread_time() - cpu) / n * 1e6


def build_node(data_dir: Path) -> Node:
    (data_dir / "config.yaml").write_text(f"a2a:\n  enabled: true\n  allowed_peers: [{PEER}]\n")
    node = Node.build(data_dir)
    node.catalog.put(PEER, "http://127.0.0.1:9", "api_key", SECRET)
    return node


@contextlib.contextmanager
def stderr_to_a_drained_pipe() -> Iterator[None]:
    """fd 2 is a pipe another thread reads (and discards) while the cases run, as a served
    node's stderr is read by whatever started it."""
    read_fd, write_fd = os.pipe()
    saved = os.dup(2)
    sys.stderr.flush()
    os.dup2(write_fd, 2)
    os.close(write_fd)

    def drain() -> None:
        while os.read(read_fd, 1 << 16):
            pass

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        yield
    finally:
        log.flush()
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        reader.join(timeout=10)
        os.close(read_fd)


async def run(n: int, rounds: int) -> list[tuple[str, float, float, float, float]]:
    """Each case's medians over `rounds`: wall µs per request and its ratio to the floor's in
    the same round; the loop thread's CPU µs and its ratio."""
    log.configure_logging("info")
    with tempfile.TemporaryDirectory() as tmp:
        node = build_node(Path(tmp))
        app = node.app()
        await node.recover()

        async def plain(_: Any) -> Response:
            return Response(b'{"jsonrpc":"2.0","id":1,"result":{}}', media_type="application/json")

        baseline = Starlette(routes=[Route("/api/v1/a2a/", plain, methods=["POST"])])
        get_body = envelope("tasks/get", {"id": "no-such-task"}, 1)
        params = {"method": "tasks/get", "id": "no-such-task"}

        async def validate_only(_: int) -> int:
            PARAMS_ADAPTER.validate_python(params)
            return 200

        # A completed echo task to read: the same task answered in each dialect.
        made = envelope("message/send", {"message": {
            "kind": "message", "messageId": "m-read", "role": "user",
            "parts": [{"kind": "text", "text": "hello"}]}}, 1)
        assert await call(app, "/api/v1/a2a/", made) == 200
        read_id = (await node.task_store.list(PEER, 1))[0].id
        get_task_body = envelope("tasks/get", {"id": read_id}, 1)
        get_task_v1_body = envelope("GetTask", {"id": read_id}, 1)

        def send_body(i: int) -> bytes:
            message = {
                "kind": "message",
                "messageId": f"m-{i}",
                "role": "user",
                "parts": [{"kind": "text", "text": "hello"}],
            }
            return envelope("message/send", {"message": message}, i)

        async def event_lines(i: int) -> int:
            # What a request's lines cost: the access event and one more, then a loop turn.
            log.emit(INBOUND_COMPLETED, operation="gateway.rpc", method="tasks/get",
                     status=200, peer_name=PEER, duration_ms=0.25, bytes_in=80,
                     bytes_out=120, reason=None)
            log.emit("a2a.task.bench", task_id=f"t-{i}", state="completed")
            await asyncio.sleep(0)
            return 200

        async def loop_turn(_: int) -> int:
            await asyncio.sleep(0)
            return 200

        metrics = Metrics(frozenset({PEER}))
        record = RequestRecord("gateway.rpc", "POST", "0.3", [])
        record.method, record.status, record.duration = "tasks/get", 200, 0.0004

        async def metrics_only(_: int) -> int:
            metrics.finished(record)
            metrics.store_call("get", 0.00005)
            await asyncio.sleep(0)  # a request ends its loop turn
            return 200

        cases: list[tuple[str, Callable[[int], Awaitable[int]]]] = [
            ("params validation only (pydantic)", validate_only),
            ("plain Starlette route (floor)",
             lambda i: call(baseline, "/api/v1/a2a/", get_body)),
            ("tasks/get, unknown id (full pipeline)",
             lambda i: call(app, "/api/v1/a2a/", get_body)),
            ("tasks/get, a completed task (full pipeline)",
             lambda i: call(app, "/api/v1/a2a/", get_task_body)),
            ("GetTask (1.0), the same task (full pipeline)",
             lambda i: call(app, "/api/v1/a2a/", get_task_v1_body, V1_HEADER)),
            ("message/send to echo (full pipeline, 2 writes)",
             lambda i: call(app, "/api/v1/a2a/", send_body(i + 10**6))),
            ("one loop turn alone (what the next rows add to)", loop_turn),
            ("a request's event lines (2 lines, 1 loop turn)", event_lines),
            ("a request's metrics (2 histograms, 1 counter, 1 turn)", metrics_only),
        ]
        columns: dict[str, list[list[float]]] = {label: [[], [], [], []] for label, _ in cases}
        floor_label = "plain Starlette route (floor)"
        for order in shuffled_rounds(cases, rounds):  # no case always runs first
            this_round = {label: await timed(label, n, one) for label, one in order}
            wall_floor, cpu_floor = this_round[floor_label]
            for label, (wall, cpu) in this_round.items():
                for column, value in zip(columns[label],
                                         (wall, wall / wall_floor, cpu, cpu / cpu_floor),
                                         strict=True):
                    column.append(value)
        node.close()
        rows = []
        for label, _ in cases:
            wall, wall_ratio, cpu, cpu_ratio = (statistics.median(c) for c in columns[label])
            rows.append((label, wall, wall_ratio, cpu, cpu_ratio))
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--metrics-dir", action="store_true",
                        help="several workers' metrics (a fresh PROMETHEUS_MULTIPROC_DIR)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as metrics_dir:
        if args.metrics_dir:
            os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
        with stderr_to_a_drained_pipe():
            rows = asyncio.run(run(args.requests, args.rounds))
    print(f"median of {args.rounds} rounds of {args.requests} requests"
          f"{', several workers' if args.metrics_dir else ''}")
    print(f"{'case':<48} {'wall us':>8} {'x floor':>8} {'cpu us':>8} {'x floor':>8}")
    for label, wall, wall_ratio, cpu, cpu_ratio in rows:
        print(f"{label:<48} {wall:>8.2f} {wall_ratio:>8.3f} {cpu:>8.2f} {cpu_ratio:>8.3f}")


if __name__ == "__main__":
    main()
