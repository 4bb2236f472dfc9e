"""Stream fan-out on one live node: N open `tasks/resubscribe` streams on one task whose
agent reports progress, the node's RSS growth per stream, and how late each status event
reaches each subscriber (its receipt against the timestamp the node wrote into it).

The subscribers are spread over several client processes (`--clients`): one Python process
reading a thousand streams falls behind by itself, and its lateness would be counted as the
node's.

    .venv/bin/python -m bench.streams [--streams N] [--clients C] [--chunks K] [--seconds S]

The issue's goals: RSS growth < 64 KiB per stream; p99 of event delivery < 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import secrets
import statistics
import sys
import tempfile
import time
from datetime import datetime
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path

import httpx

from tests.support.node import NodeProcess, cli

PEER = "bench-peer"
CONFIG = """\
a2a:
  enabled: true
  allowed_peers: [{peer}]
agents:
  - id: ticker
    name: Ticker
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {{seconds: {seconds}, chunks: {chunks}}}
"""


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def parse_ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


async def subscriber(client: httpx.AsyncClient, task_id: str, opened: asyncio.Event,
                     all_open: Event, lags: list[float]) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/resubscribe", "params": {"id": task_id}}
    async with client.stream("POST", "/api/v1/a2a/", json=body) as response:
        first = True
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            received = time.time()
            if first:
                first = False
                opened.set()
                continue
            if '"status-update"' not in line or not all_open.is_set():
                continue
            status = json.loads(line[5:])["result"].get("status") or {}
            if status.get("timestamp"):
                lags.append(received - parse_ts(status["timestamp"]))


async def subscribe(url: str, key: str, task_id: str, streams: int, ready: Queue[int],
                    all_open: Event) -> list[float]:
    limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=streams + 10)
    headers = {"X-A2A-Peer-Name": PEER, "X-API-Key": key}
    lags: list[float] = []
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits,
                                 timeout=httpx.Timeout(300.0)) as client:
        opened = [asyncio.Event() for _ in range(streams)]
        tasks = [asyncio.ensure_future(subscriber(client, task_id, o, all_open, lags))
                 for o in opened]
        for o in opened:
            await asyncio.wait_for(o.wait(), 120)
        ready.put(streams)
        await asyncio.wait_for(asyncio.gather(*tasks), 300)
    return lags


def client_process(url: str, key: str, task_id: str, streams: int, ready: Queue[int],
                   all_open: Event, results: Queue[list[float]]) -> None:
    results.put(asyncio.run(subscribe(url, key, task_id, streams, ready, all_open)))


def start_task(node: NodeProcess, key: str) -> str:
    params = {"message": {"kind": "message", "messageId": secrets.token_hex(8),
                          "role": "user", "parts": [{"kind": "text", "text": "tick"}],
                          "metadata": {"agentId": "ticker"}},
              "configuration": {"blocking": False}}
    sent = httpx.post(f"{node.url}/api/v1/a2a/",
                      headers={"X-A2A-Peer-Name": PEER, "X-API-Key": key},
                      json={"jsonrpc": "2.0", "id": 1, "method": "message/send",
                            "params": params}, timeout=30)
    return str(sent.json()["result"]["id"])


def run(node: NodeProcess, key: str, streams: int, clients: int) -> dict[str, float]:
    assert node.proc is not None
    before = rss_kib(node.proc.pid)
    task_id = start_task(node, key)
    context = multiprocessing.get_context("spawn")
    ready, results, all_open = context.Queue(), context.Queue(), context.Event()
    shares = [streams // clients + (1 if i < streams % clients else 0) for i in range(clients)]
    procs = [context.Process(target=client_process,
                             args=(node.url, key, task_id, share, ready, all_open, results))
             for share in shares if share]
    for proc in procs:
        proc.start()
    opened = sum(ready.get(timeout=180) for _ in procs)
    during = rss_kib(node.proc.pid)
    all_open.set()
    lags = sorted(lag for _ in procs for lag in results.get(timeout=600))
    for proc in procs:
        proc.join(30)
    return {
        "streams": opened,
        "rss_before_kib": before,
        "rss_open_kib": during,
        "rss_per_stream_kib": (during - before) / streams,
        "events_measured": len(lags),
        "lag_p50_ms": 1000 * statistics.median(lags) if lags else float("nan"),
        "lag_p99_ms": 1000 * lags[int(len(lags) * 0.99) - 1] if lags else float("nan"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.streams")
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=4, help="client processes")
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "node"
        key = secrets.token_urlsafe(16)
        node = NodeProcess(data, CONFIG.format(peer=PEER, seconds=args.seconds,
                                               chunks=args.chunks))
        cli(data, "peers", "add", PEER, "--endpoint", "http://127.0.0.1:9", stdin=key)
        with node:
            result = run(node, key, args.streams, max(1, args.clients))
    for name, value in result.items():
        print(f"{name:22} {value:.2f}" if isinstance(value, float) else f"{name:22} {value}")
    ok_rss = result["rss_per_stream_kib"] < 64
    ok_lag = result["lag_p99_ms"] < 50
    print(f"{'PASS' if ok_rss else 'FAIL'}: RSS growth per stream < 64 KiB")
    print(f"{'PASS' if ok_lag else 'FAIL'}: event delivery p99 < 50 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
