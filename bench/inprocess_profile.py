"""Where a request's CPU goes in process: the node's ASGI app called straight, sampled by py-spy.

The in-process half of `bench.request_profile` (`make bench-profile`, the node as it serves).
The same rows (tasks/get of a completed task through the three gates, a 401 for a wrong key,
a durable message/send to the echo agent) are calls into the node's ASGI app on uvloop, with
no socket and no HTTP server: what is left is the node's own work. A child process builds a
node (a fresh SQLite data dir, the bench peer, event lines at info to a file, as a served
node's go to whatever reads its stderr), calls one row in a loop for the warm-up, then for the
measured seconds. Each round gives each row two such children:

- a plain run, for the CPU per request: each thread's utime + stime over the measured seconds
  (/proc), divided by the calls made;
- a sampled run: py-spy reads the child's stacks from outside over the measured seconds
  (nonblocking, as the live profile does).

Samples are charged to the parts of the node by `bench.stack_rules`, the live profile's rules.
The driver's own frames (the scope it builds, its `receive` and `send`) stand for what a
server does, so they are charged to the server's part.

    .venv/bin/python -m bench.inprocess_profile [--rounds N] [--duration S] [--warmup S]
                                                [--quick] [--rate HZ] [--frames N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import pipeline, stack_rules
from bench.pipeline import PEER, SECRET, build_node, envelope
from bench.rounds import add_load_options, each_round, finish_load_options
from bench.system import cpu_model, thread_cpu_seconds

if TYPE_CHECKING:
    from bench.request_profile import Profile

PATH = "/api/v1/a2a/"  # the gateway's JSON-RPC endpoint
MEASURING = "measuring"  # the child's line when its measured seconds start
ROWS = ("tasks/get", "401 wrong key", "message/send")
SPY_GRACE = 30


def send_body(i: int) -> bytes:
    message = {"kind": "message", "messageId": f"m-{i}", "role": "user",
               "parts": [{"kind": "text", "text": "hello"}]}
    return envelope("message/send", {"message": message}, i)


def call(app: Any, body: bytes, secret: str = SECRET) -> Awaitable[int]:
    """One POST to the gateway through the ASGI app, as a server would make it (the bench
    peer's name and `secret`); its status."""
    headers = [(b"content-type", b"application/json"), (b"x-a2a-peer-name", PEER.encode()),
               (b"x-api-key", secret.encode())]
    return pipeline.call(app, PATH, body, headers=headers)


# -- the child: one row in a loop ------------------------------------------------------------

async def row_call(row: str, app: Any, node: Any) -> tuple[Callable[[int], Awaitable[int]], int]:
    """The row's call (by a running index) and the status it must answer."""
    if row == "tasks/get":
        assert await call(app, send_body(0)) == 200
        task_id = (await node.task_store.list(PEER, 1))[0].id
        body = envelope("tasks/get", {"id": task_id}, 1)
        return (lambda i: call(app, body)), 200
    if row == "401 wrong key":
        body = envelope("tasks/get", {"id": "no-such-task"}, 1)
        return (lambda i: call(app, body, secret="not-" + SECRET)), 401
    if row == "message/send":
        return (lambda i: call(app, send_body(i + 1))), 200
    raise ValueError(f"unknown row {row!r}")


async def drive(row: str, warmup: float, seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="synthorg-inprocess-") as tmp:
        node = build_node(Path(tmp))
        app = node.app()
        await node.recover()
        one, expected = await row_call(row, app, node)
        i = 0
        stop = time.perf_counter() + warmup
        while time.perf_counter() < stop or i == 0:
            assert await one(i) == expected, row
            i += 1
        before, first = thread_cpu_seconds(os.getpid()), i
        print(MEASURING, flush=True)
        stop = time.perf_counter() + seconds
        while time.perf_counter() < stop:
            await one(i)
            i += 1
        after = thread_cpu_seconds(os.getpid())
        node.close()
    return {"calls": i - first, "loop": threading.get_native_id(),
            "cpu": {str(tid): spent - before.get(tid, 0.0) for tid, spent in after.items()}}


def child(row: str, warmup: float, seconds: float) -> None:
    import uvloop

    from synthorg.observability import log

    log.configure_logging("info")
    found = uvloop.run(drive(row, warmup, seconds))
    log.flush()
    print(json.dumps(found), flush=True)


# -- the parent: rounds, py-spy, the table ---------------------------------------------------

def start_child(row: str, warmup: float, seconds: float, log: Path) -> subprocess.Popen[str]:
    with log.open("ab") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "bench.inprocess_profile", "--child", row,
             "--warmup", str(warmup), "--duration", str(seconds)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True)


def finish(proc: subprocess.Popen[str], seconds: float) -> dict[str, Any]:
    out, _ = proc.communicate(timeout=seconds + 120)
    if proc.returncode != 0:
        raise RuntimeError(f"the child failed ({proc.returncode})")
    found: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return found


def roles_of(found: dict[str, Any]) -> dict[int, int]:
    """A child's thread ids by role: 0 the loop's thread, 1.. the others in order of id (the
    event line writer, a pool thread), so the rounds' children line up."""
    loop = int(found["loop"])
    others = sorted(int(tid) for tid in found["cpu"] if int(tid) != loop)
    return {loop: 0, **{tid: n + 1 for n, tid in enumerate(others)}}


def by_role(found: dict[str, Any]) -> dict[int, float]:
    """CPU µs per call of each thread, by role."""
    calls, roles = max(int(found["calls"]), 1), roles_of(found)
    return {roles[int(tid)]: spent * 1e6 / calls for tid, spent in found["cpu"].items()}


def renumbered(line: str, roles: dict[int, int]) -> str:
    """A raw py-spy line with its thread id replaced by the thread's role."""
    stack = stack_rules.parse_line(line)
    if stack is None or stack.thread not in roles:
        return line
    return line.replace(f"({stack.thread})", f"({roles[stack.thread]})", 1).replace(
        f"({stack.thread:#x})", f"({roles[stack.thread]})", 1)


def measure_row(row: Profile, args: argparse.Namespace, spy: str, tmp: Path, index: int) -> None:
    log = tmp / "events.log"
    plain = finish(start_child(row.name, args.warmup, args.duration, log), args.duration)
    row.thread_us.append(by_role(plain))
    row.rps.append(plain["calls"] / args.duration)
    proc = start_child(row.name, args.warmup, args.duration + 1, log)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != MEASURING:
        proc.kill()
        raise RuntimeError("the sampled child did not start measuring")
    out = tmp / f"{row.name.split()[0].replace('/', '-')}-{index}.txt"
    subprocess.run([spy, "record", "--pid", str(proc.pid), "--format", "raw", "--nonblocking",
                    "--threads", "--rate", str(args.rate), "--duration", str(args.duration),
                    "--output", str(out)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True, timeout=args.duration + SPY_GRACE)
    roles = roles_of(finish(proc, args.duration))
    for line in out.read_text().splitlines():
        row.samples.add(renumbered(line, roles))
    print(f"  {row.name}: {plain['calls'] / args.duration:,.0f} calls/s, "
          f"{sum(row.thread_us[-1].values()):.0f} µs CPU/call", flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.inprocess_profile",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_load_options(parser, duration=5, warmup=1, quick=(1, 2, 0.5), seconds=float)
    parser.set_defaults(rounds=3)
    parser.add_argument("--rate", type=int, default=250, metavar="HZ",
                        help="py-spy samples per second (default 250)")
    parser.add_argument("--frames", type=int, default=0, metavar="N",
                        help="also list, per row and part, the N frames that decided most")
    parser.add_argument("--child", choices=ROWS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    return args if args.child else finish_load_options(parser, args)


def main(argv: list[str] | None = None) -> int:
    from bench.request_profile import Profile, deciding_frames, find_py_spy, table

    args = parse_args(argv)
    if args.child:
        child(args.child, args.warmup, args.duration)
        return 0
    spy = find_py_spy()
    if spy is None:
        print("error: py-spy not found: `make venv` installs it (dev extras)", file=sys.stderr)
        return 2
    print(f"in-process profile: {args.rounds} round(s) x (plain {args.duration:g} s + sampled "
          f"{args.duration:g} s) per row ({args.warmup:g} s warm-up), py-spy at {args.rate} Hz; "
          f"machine: {cpu_model()}", flush=True)
    rows = [Profile(name) for name in ROWS]
    with tempfile.TemporaryDirectory(prefix="synthorg-inprocess-profile-") as tmp:
        for index, row in enumerate(each_round(rows, args.rounds)):
            measure_row(row, args, spy, Path(tmp), index)
    print("\n" + table(rows, 0, rate="calls/s (plain runs, median)"))
    for row in rows:
        print("\n" + deciding_frames(row, args.frames), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
