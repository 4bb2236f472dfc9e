"""Push delivery throughput and durability on one live node (the `node-push` rows of
`make bench`; also runnable alone).

A node (its own process, SQLite) parks T tasks in input-required, each with C push configs
(the most a task may have) pointing at a local receiver (`bench.push_sink`, its own process,
on 127.0.0.1, allowed by `a2a.push_allow_private_networks`). Once every input-required push
has arrived, all T tasks are canceled at once: T x C pushes owed in one burst, most of them
after the last cancel was answered, so the burst measures the deliverer rather than the
gateway. Two runs on the same node:

1. throughput: deliveries/s over the burst (first to last canceled push received), and per
   CPU-second of the node;
2. durability: a new burst, the node killed with SIGKILL once a third of it has arrived
   (cancels still going out), restarted on the same data dir; every push owed (each config of
   each task the node holds as canceled) must arrive at least once. Duplicates are counted
   by X-A2A-Delivery-Id.

    .venv/bin/python -m bench.push [--quick] [--tasks T] [--configs C]

The goal (issue 11): >= 1,000 deliveries/s, none lost across the kill.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx
from cryptography.fernet import Fernet

from bench.report import Check
from bench.system import cpu_seconds
from synthorg.generated.constants import TASK_NOT_CANCELABLE
from tests.support.node import ROOT, NodeProcess, cli
from tests.support.postgres import throwaway_database

T = TypeVar("T")
NOT_CANCELABLE = TASK_NOT_CANCELABLE.code
PEER = "bench-pusher"
GOAL = 1000.0  # deliveries per second
TASKS, QUICK_TASKS, CONFIGS = 500, 100, 16  # T x C pushes per burst
CONCURRENCY = 32  # the bench's requests in flight while filling and canceling
WAIT = 180.0  # seconds a burst may take to arrive before the run counts as failed
CONFIG = """\
a2a:
  enabled: true
  node_name: bench-push-node
  allowed_peers: [{peer}]
  push_allow_private_networks: true
agents:
  - {{id: park, name: Park, executor: {{kind: park}}}}
"""


class Sink:
    """The receiver process and what it has received so far (read incrementally)."""

    def __init__(self, workdir: Path) -> None:
        self.path = workdir / "push-sink.log"
        self.path.touch()
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.push_sink", str(self.path)],
                                     cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())
        self.records: list[tuple[float, str, str, str, str]] = []
        self._offset = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def read(self) -> list[tuple[float, str, str, str, str]]:
        with self.path.open("rb") as log:
            log.seek(self._offset)
            chunk = log.read()
        complete = chunk[:chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.decode().splitlines():
            at, delivery, task, state, path = line.split(" ")
            self.records.append((float(at), delivery, task, state, path))
        return self.records

    def count(self, state: str, tasks: set[str]) -> int:
        return sum(1 for r in self.read() if r[3] == state and r[2] in tasks)

    def wait_for(self, state: str, tasks: set[str], owed: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len({(r[2], r[4]) for r in self.read() if r[3] == state and r[2] in tasks}) >= owed:
                return True
            time.sleep(0.02)  # polling the receiver's log with a deadline
        return False

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@dataclass
class Burst:
    deliveries: int
    seconds: float  # first to last push of the burst received
    node_cpu: float  # the node's CPU-seconds meanwhile (from the first cancel sent)
    since_cancel: float  # first cancel sent to last push received

    @property
    def rate(self) -> float:
        return self.deliveries / self.seconds if self.seconds > 0 else float("nan")

    @property
    def per_cpu(self) -> float:
        return self.deliveries / self.node_cpu if self.node_cpu > 0 else float("nan")


@dataclass
class Durability:
    owed: int
    arrived: int  # distinct (task, config) canceled pushes received
    at_kill: int  # of them before the kill
    duplicates: int  # pushes received again with a delivery id already seen
    recovery_seconds: float  # restart to the last owed push


async def _rpc(client: httpx.AsyncClient, method: str, params: dict[str, object],
               also_ok: int | None = None) -> dict[str, object]:
    """The call's result; a dropped connection is retried (every call here is idempotent,
    and `also_ok` is the error a repeat may answer, e.g. a cancel already applied)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    for attempt in range(3):
        try:
            answer = (await client.post("/api/v1/a2a/", json=body)).json()
            break
        except httpx.TransportError:
            if attempt == 2:
                raise
    if "result" in answer:
        return dict(answer["result"])
    if also_ok is not None and answer.get("error", {}).get("code") == also_ok:
        return {}
    raise RuntimeError(f"{method}: {answer.get('error')}")


async def _bounded(jobs: Sequence[Callable[[], Awaitable[T]]], limit: int = CONCURRENCY) -> list[T]:
    """Each job started (called) only when it has a slot: one that fails leaves no call
    made and never awaited behind it."""
    gate = asyncio.Semaphore(limit)

    async def one(job: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await job()

    return list(await asyncio.gather(*(one(j) for j in jobs)))


def _client(node: NodeProcess, key: str) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    return httpx.AsyncClient(base_url=node.url, limits=limits, timeout=60.0,
                             headers={"X-A2A-Peer-Name": PEER, "X-API-Key": key})


async def fill(node: NodeProcess, key: str, sink: Sink, tasks: int, configs: int,
               label: str) -> list[str]:
    """T parked tasks with C configs each; returns their ids once every input-required
    push has arrived."""
    async with _client(node, key) as client:
        async def park(n: int) -> str:
            message = {"kind": "message", "messageId": f"{label}-{n}-{secrets.token_hex(4)}",
                       "role": "user", "parts": [{"kind": "text", "text": "park"}],
                       "metadata": {"agentId": "park"}}
            task = await _rpc(client, "message/send", {"message": message})
            return str(task["id"])

        ids = await _bounded([functools.partial(park, n) for n in range(tasks)])

        async def configure(task_id: str, c: int) -> None:
            config = {"id": f"c{c}", "url": f"{sink.url}/hook/{c}"}
            await _rpc(client, "tasks/pushNotificationConfig/set",
                       {"taskId": task_id, "pushNotificationConfig": config})

        await _bounded([functools.partial(configure, t, c) for t in ids for c in range(configs)])
    if not sink.wait_for("input-required", set(ids), tasks * configs, WAIT):
        raise RuntimeError("the input-required pushes did not all arrive")
    return ids


async def cancel_all(node: NodeProcess, key: str, ids: list[str]) -> None:
    async with _client(node, key) as client:
        await _bounded([functools.partial(_rpc, client, "tasks/cancel", {"id": t}, NOT_CANCELABLE)
                        for t in ids])


def throughput(node: NodeProcess, key: str, sink: Sink, tasks: int, configs: int) -> Burst:
    ids = asyncio.run(fill(node, key, sink, tasks, configs, "rate"))
    assert node.proc is not None
    cpu_before, started = cpu_seconds(node.proc.pid), time.monotonic()
    asyncio.run(cancel_all(node, key, ids))
    owed = tasks * configs
    if not sink.wait_for("canceled", set(ids), owed, WAIT):
        raise RuntimeError(f"only {sink.count('canceled', set(ids))} of {owed} pushes arrived")
    node_cpu = cpu_seconds(node.proc.pid) - cpu_before
    times = sorted(r[0] for r in sink.read() if r[3] == "canceled" and r[2] in set(ids))
    return Burst(owed, times[-1] - times[0], node_cpu, times[-1] - started)


def durability(node: NodeProcess, key: str, sink: Sink, tasks: int, configs: int) -> Durability:
    ids = asyncio.run(fill(node, key, sink, tasks, configs, "kill"))
    wanted = set(ids)
    # The cancels go out while the node is killed: some land, some are cut off with it.
    canceling = threading.Thread(target=_cancel_until_killed, args=(node, key, ids))
    canceling.start()
    deadline = time.monotonic() + WAIT
    while sink.count("canceled", wanted) < tasks * configs // 3 and time.monotonic() < deadline:
        time.sleep(0.002)  # polling the receiver's log with a deadline
    node.kill()
    canceling.join()
    at_kill = len({(r[2], r[4]) for r in sink.read() if r[3] == "canceled" and r[2] in wanted})
    restarted = time.monotonic()
    node.start()
    # Owed: every config of every task the node holds as canceled (a cancel it committed).
    canceled = asyncio.run(_canceled(node, key, ids))
    owed = len(canceled) * configs
    sink.wait_for("canceled", canceled, owed, WAIT)
    received = [r for r in sink.read() if r[3] == "canceled" and r[2] in wanted]
    last = max((r[0] for r in received), default=restarted)
    per_id = Counter(r[1] for r in received)
    arrived = {(r[2], r[4]) for r in received if r[2] in canceled}
    return Durability(owed, len(arrived), at_kill, sum(n - 1 for n in per_id.values()),
                      max(0.0, last - restarted))


def _cancel_until_killed(node: NodeProcess, key: str, ids: list[str]) -> None:
    with contextlib.suppress(httpx.TransportError, RuntimeError):
        asyncio.run(cancel_all(node, key, ids))


async def _canceled(node: NodeProcess, key: str, ids: list[str]) -> set[str]:
    async with _client(node, key) as client:
        get = [functools.partial(_rpc, client, "tasks/get", {"id": t}) for t in ids]
        tasks = await _bounded(get)
    return {str(t["id"]) for t in tasks if _state(t) == "canceled"}


def _state(task: dict[str, object]) -> object:
    status = task.get("status")
    return status.get("state") if isinstance(status, dict) else None


@dataclass
class PushResult:
    burst: Burst
    kill: Durability

    def lines(self) -> list[str]:
        b, k = self.burst, self.kill
        return [
            f"  burst:      {b.deliveries} pushes in {b.seconds:.2f} s = {b.rate:8.0f} "
            f"deliveries/s ({b.per_cpu:.0f} per node CPU-second; {b.since_cancel:.2f} s from "
            "the first cancel sent)",
            f"  kill -9:    {k.arrived}/{k.owed} owed pushes arrived ({k.at_kill} before the "
            f"kill), {k.duplicates} duplicates by delivery id, last {k.recovery_seconds:.1f} s "
            "after the restart",
        ]

    def checks(self) -> list[Check]:
        b, k = self.burst, self.kill
        return [
            Check(f"push delivery >= {GOAL:.0f}/s to a local receiver", b.rate >= GOAL,
                  f"{b.rate:.0f} deliveries/s over a burst of {b.deliveries}"),
            Check("no push lost across kill -9 of the sender", k.arrived == k.owed,
                  f"{k.arrived}/{k.owed} arrived, {k.duplicates} duplicates (at least once)"),
        ]


def run(workdir: Path, tasks: int, configs: int, database_url: str | None = None) -> PushResult:
    """Both runs on one node: on SQLite in the workdir, or on `database_url` (PostgreSQL)."""
    data = workdir / "node-push"
    key = secrets.token_urlsafe(24)
    env = {} if database_url is None else {
        "SYNTHORG_DATABASE_URL": database_url,
        "SYNTHORG_SECRET_KEY": Fernet.generate_key().decode(),
    }
    sink = Sink(workdir)
    try:
        node = NodeProcess(data, CONFIG.format(peer=PEER), env=env)
        cli(data, "peers", "add", PEER, "--endpoint", "http://127.0.0.1:9", stdin=key, env=env)
        with node:
            burst = throughput(node, key, sink, tasks, configs)
            kill = durability(node, key, sink, tasks, configs)
        return PushResult(burst, kill)
    finally:
        sink.stop()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.push", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=TASKS, metavar="T")
    parser.add_argument("--configs", type=int, default=CONFIGS, metavar="C",
                        help="push configs per task (1..16, default 16)")
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_TASKS} tasks")
    parser.add_argument("--pg", action="store_true",
                        help="the node on a throwaway PostgreSQL database "
                        "(SYNTHORG_TEST_POSTGRES_URL or 127.0.0.1:5432, as the tests use)")
    args = parser.parse_args(argv)
    if args.quick:
        args.tasks = QUICK_TASKS
    if not 1 <= args.configs <= 16 or args.tasks < 3:
        parser.error("--configs must be 1..16 and --tasks at least 3")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    store = "PostgreSQL" if args.pg else "SQLite"
    print(f"push bench: {args.tasks} parked tasks x {args.configs} configs, one receiver on "
          f"127.0.0.1, the node on {store}", flush=True)
    with tempfile.TemporaryDirectory(prefix="synthorg-push-bench-") as tmp:
        if args.pg:
            with throwaway_database("synthorg_push_bench") as url:
                result = run(Path(tmp), args.tasks, args.configs, url)
        else:
            result = run(Path(tmp), args.tasks, args.configs)
    for line in result.lines():
        print(line)
    for check in result.checks():
        print(check.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
