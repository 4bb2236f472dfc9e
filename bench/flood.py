"""The flooding-peer row of `make bench`: one node with two workers, a polite peer (no limit
of its own) measured under wrk alone, then again while a flooding peer hammers the same node
far above its rate limit. The goal: the polite peer's p99 stays within 2x of its value with
no flood. Both runs in one bench run, so the ratio means something on a noisy machine.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from bench.report import Check
from bench.scenarios import post, tasks_get_body
from bench.servers import ROOT, Server, launch
from bench.system import Pinning
from bench.wrk import Load, WrkResult, lua_script, message_send, run_wrk

LIMIT = 50  # the flooding peer's requests per second (and burst)
POLITE_CONNECTIONS = 4
FLOOD_CONNECTIONS = 32
NODE_STARTED = "a2a.node.started"


@dataclass
class FloodResult:
    alone: WrkResult
    flooded: WrkResult
    flood: WrkResult

    @property
    def p99_ratio(self) -> float:
        return self.flooded.latency_us["p99"] / self.alone.latency_us["p99"]

    @property
    def flood_offered(self) -> float:
        return self.flood.rps

    def lines(self) -> list[str]:
        a, f = self.alone.latency_us, self.flooded.latency_us
        refused = self.flood.errors.get("status", 0)
        return [
            f"  polite alone:   {self.alone.rps:8.0f} req/s, p50 {a['p50'] / 1000:.2f} ms, "
            f"p99 {a['p99'] / 1000:.2f} ms",
            f"  polite flooded: {self.flooded.rps:8.0f} req/s, p50 {f['p50'] / 1000:.2f} ms, "
            f"p99 {f['p99'] / 1000:.2f} ms",
            f"  flood:          {self.flood.rps:8.0f} req/s offered ({self.flood.rps / LIMIT:.0f}x "
            f"its limit of {LIMIT}/s), {refused} refused with 429",
        ]

    def check(self) -> Check:
        detail = (f"p99 {self.p99_ratio:.2f}x its value with no flood; the flood at "
                  f"{self.flood_offered / LIMIT:.0f}x its limit")
        passed = self.p99_ratio <= 2.0 if self.flood_offered >= 10 * LIMIT else None
        return Check("flooding peer at >= 10x its limit: polite p99 <= 2x", passed, detail)


def _cli(env: dict[str, str], *args: str, stdin: str = "") -> None:
    done = subprocess.run([sys.executable, "-m", "synthorg.cli.main", *args], input=stdin.encode(),
                          env=env, cwd=ROOT, capture_output=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stderr.decode(errors='replace')}")


def start(workdir: Path, pin: list[str]) -> tuple[Server, dict[str, dict[str, str]]]:
    data_dir = workdir / "node-flood"
    data_dir.mkdir(mode=0o700)
    (data_dir / "config.yaml").write_text(
        "a2a:\n  enabled: true\n  allowed_peers: [polite, flood]\n"
        f"  peer_rate_limit_per_second: {LIMIT}\n  peer_rate_limit_burst: {LIMIT}\n")
    env = {**os.environ, "SYNTHORG_DATA_DIR": str(data_dir)}
    headers = {}
    for peer in ("polite", "flood"):
        secret = secrets.token_urlsafe(32)
        _cli(env, "peers", "add", peer, "--endpoint", "http://127.0.0.1:9", stdin=secret)
        headers[peer] = {"X-A2A-Peer-Name": peer, "X-API-Key": secret}
    _cli(env, "peers", "update", "polite", "--rate-limit", "0")  # no limit of its own
    env |= {"SYNTHORG_BACKEND_HOST": "127.0.0.1", "SYNTHORG_BACKEND_PORT": "0"}
    command = [*pin, sys.executable, "-m", "synthorg.api", "--workers", "2"]
    server = launch("node-flood", "node", command, env, workdir / "node-flood.log", NODE_STARTED)
    return server, headers


def run(wrk: str, pinning: Pinning, workdir: Path, duration: int, warmup: int) -> FloodResult:
    server, headers = start(workdir, pinning.server)
    try:
        server.headers = headers["polite"]
        _, answer = post(server, message_send(f"setup-{uuid.uuid4()}", "flood"),
                              headers["polite"])
        task_id = answer["result"]["id"]
        polite = Load(headers["polite"], body=tasks_get_body(task_id))
        flood = Load(headers["flood"], body=tasks_get_body(str(uuid.uuid4())))
        polite_script, flood_script = workdir / "polite.lua", workdir / "flood.lua"
        polite_script.write_text(lua_script(polite, "polite"))
        flood_script.write_text(lua_script(flood, "flood"))

        def polite_run(seconds: int) -> WrkResult:
            return run_wrk(wrk, pinning.load, server.rpc_url, polite_script, threads=1,
                           connections=POLITE_CONNECTIONS, seconds=seconds)

        if warmup:
            polite_run(warmup)
        alone = polite_run(duration)
        flooded: list[WrkResult] = []
        flood_thread = threading.Thread(target=lambda: flooded.append(run_wrk(
            wrk, pinning.load, server.rpc_url, flood_script, threads=1,
            connections=FLOOD_CONNECTIONS, seconds=duration + warmup + 2)))
        flood_thread.start()
        time.sleep(warmup + 1)  # the flood reaches its pace before the polite run is measured
        with_flood = polite_run(duration)
        flood_thread.join()
        return FloodResult(alone, with_flood, flooded[0])
    finally:
        server.stop()
