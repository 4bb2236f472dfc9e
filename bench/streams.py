"""Stream fan-out on one live node: N open `tasks/resubscribe` streams on one task whose
agent reports progress, the node's RSS growth per stream, and how late each status event
reaches each subscriber (its receipt against the timestamp the node wrote into it).

    .venv/bin/python -m bench.streams [--streams N] [--chunks K] [--seconds S]

The issue's goals: RSS growth < 64 KiB per stream; p99 of event delivery < 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import sys
import tempfile
import time
from datetime import datetime
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
                     ready: list[int], total: int, lags: list[float]) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/resubscribe", "params": {"id": task_id}}
    async with client.stream("POST", "/api/v1/a2a/", json=body) as response:
        lines = response.aiter_lines()
        first = True
        async for line in lines:
            if not line.startswith("data:"):
                continue
            received = time.time()
            result = json.loads(line[5:])["result"]
            if first:
                first = False
                ready.append(1)
                if len(ready) == total:
                    opened.set()
                continue
            status = result.get("status") if result.get("kind") == "status-update" else None
            if status and status.get("timestamp") and opened.is_set():
                lags.append(received - parse_ts(status["timestamp"]))


async def run(node: NodeProcess, key: str, streams: int) -> dict[str, float]:
    limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=streams + 10)
    headers = {"X-A2A-Peer-Name": PEER, "X-API-Key": key}
    async with httpx.AsyncClient(base_url=node.url, headers=headers, limits=limits,
                                 timeout=httpx.Timeout(120.0)) as client:
        assert node.proc is not None
        before = rss_kib(node.proc.pid)
        params = {"message": {"kind": "message", "messageId": secrets.token_hex(8),
                              "role": "user", "parts": [{"kind": "text", "text": "tick"}],
                              "metadata": {"agentId": "ticker"}},
                  "configuration": {"blocking": False}}
        sent = await client.post("/api/v1/a2a/", json={"jsonrpc": "2.0", "id": 1,
                                                        "method": "message/send",
                                                        "params": params})
        task_id = sent.json()["result"]["id"]
        opened = asyncio.Event()
        ready: list[int] = []
        lags: list[float] = []
        tasks = [asyncio.ensure_future(subscriber(client, task_id, opened, ready, streams, lags))
                 for _ in range(streams)]
        await asyncio.wait_for(opened.wait(), 120)
        during = rss_kib(node.proc.pid)
        await asyncio.wait_for(asyncio.gather(*tasks), 300)
    lags.sort()
    return {
        "streams": streams,
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
            result = asyncio.run(run(node, key, args.streams))
    for name, value in result.items():
        print(f"{name:22} {value:.2f}" if isinstance(value, float) else f"{name:22} {value}")
    ok_rss = result["rss_per_stream_kib"] < 64
    ok_lag = result["lag_p99_ms"] < 50
    print(f"{'PASS' if ok_rss else 'FAIL'}: RSS growth per stream < 64 KiB")
    print(f"{'PASS' if ok_lag else 'FAIL'}: event delivery p99 < 50 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
