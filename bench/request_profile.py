"""Where a live request's CPU goes (`make bench-profile`): the node's rows, sampled by py-spy.

The node as it serves (`python -m synthorg.api`: uvicorn with the node's protocol class) is
pinned to one CPU; wrk drives it from the other, 32 connections, with the rows of the live
bench: tasks/get through the three gates, a 401 for a wrong key, a durable message/send.
Each round gives each row two runs of the same load:

- a plain run, for the CPU per request: the node's utime + stime over the run (/proc), thread
  by thread (the loop's, the event line writer's, the WAL checkpoints' pool);
- a sampled run: py-spy reads the stacks of every thread from outside (`record --nonblocking
  --format raw --threads`: the node is never paused; blocking mode stops it at each sample
  and costs it much of its rate).

Each sample is charged to one part of the node by its stack (`bench.stack_rules`, one table of
rules), samples of a waiting thread left out. A part's CPU per request is its share of each
thread's samples times that thread's CPU per request (median over the rounds), summed over
the threads. A part's CPU includes the kernel's on its behalf (the socket write in uvicorn's
send, SQLite's file writes, the event lines' write): a sample shows where the thread was, not
whether it was in the kernel. Shares of samples, not timers: the request runs untouched; at
the default length (up to 7,500 samples a row) a share's sampling error is about half a
percentage point at most (the sample counts are printed). `--frames N` lists, per part, the
frames that decided the most of it; "other" always lists its innermost frames, for a rule to
add.

py-spy (a binary wheel) is in the dev extras (`make venv`); elsewhere `pip install py-spy`. It
reads another process's memory: it needs ptrace rights over the node (root, or
kernel.yama.ptrace_scope 0).

    .venv/bin/python -m bench.request_profile [--rounds N] [--duration S] [--warmup S]
                                              [--quick] [--rate HZ] [--connections N]
                                              [--frames N] [--raw DIR]
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench import stack_rules
from bench.rounds import add_load_options, each_round, finish_load_options, measure, unexpected
from bench.scenarios import probe
from bench.server_choice import NODE_ROWS, plain_config, start_node_uvicorn
from bench.servers import Server
from bench.system import Pinning, cpu_model, plan_pinning, thread_cpu_seconds
from bench.wrk import Load, WrkError, WrkResult, find_wrk, lua_script, run_wrk

SPY_GRACE = 30  # seconds py-spy may take past its duration to write its output
GONE = -1  # the CPU of threads that exited during a run, in place of a thread id

class SpyError(RuntimeError):
    pass


Run = Callable[[float], WrkResult]  # one wrk run of a row's load, for so many seconds


@dataclass
class Profile:
    """A row's measurements over the rounds, live (`Row`) or in process
    (`bench.inprocess_profile`)."""

    name: str
    thread_us: list[dict[int, float]] = field(default_factory=list)  # CPU/req by thread, a round
    rps: list[float] = field(default_factory=list)
    samples: stack_rules.Tally = field(default_factory=stack_rules.Tally)

    def cpu_us(self) -> dict[int, float]:
        """Each thread's CPU µs per request, the median over the rounds."""
        threads = {tid for found in self.thread_us for tid in found}
        return {tid: statistics.median(found.get(tid, 0.0) for found in self.thread_us)
                for tid in threads}

    def charged(self) -> dict[stack_rules.Decided, float]:
        """CPU µs per request by category and the frame that decided it."""
        return stack_rules.charge(self.samples, self.cpu_us())


@dataclass(kw_only=True)
class Row(Profile):
    """A live row: its wrk load and script."""

    load: Load
    script: Path


def wrk_runner(wrk: str, pin: list[str], url: str, script: Path, connections: int) -> Run:
    def run(seconds: float) -> WrkResult:
        return run_wrk(wrk, pin, url, script, threads=1, connections=connections,
                       seconds=seconds)
    return run


def find_py_spy() -> str | None:
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.request_profile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_load_options(parser, duration=10, warmup=2, quick=(1, 3, 1))
    parser.set_defaults(rounds=3)
    parser.add_argument("--connections", type=int, default=32, metavar="N",
                        help="wrk connections (default 32)")
    parser.add_argument("--rate", type=int, default=250, metavar="HZ",
                        help="py-spy samples per second (default 250)")
    parser.add_argument("--frames", type=int, default=0, metavar="N",
                        help="also list, per row and part, the N frames that decided most")
    parser.add_argument("--raw", type=Path, metavar="DIR",
                        help="keep py-spy's raw stacks here, one file per row and round")
    return finish_load_options(parser, parser.parse_args(argv))


def plain(run: Run, server: Server, seconds: int,
          cpu: int | None) -> tuple[dict[int, float], WrkResult]:
    """One run: the CPU µs per request of each thread of the node, and wrk's result."""
    before = thread_cpu_seconds(server.pid)
    sample = measure(server, lambda: run(seconds), cpu)
    after = thread_cpu_seconds(server.pid)
    requests = max(sample.result.requests, 1)
    found = {tid: (spent - before.get(tid, 0.0)) * 1e6 / requests
             for tid, spent in after.items() if spent > before.get(tid, 0.0)}
    gone = sample.server_cpu_s * 1e6 / requests - sum(found.values())
    if gone > 0:
        found[GONE] = gone
    return found, sample.result


def sampled(spy: str, pid: int, seconds: int, rate: int, out: Path, run: Run) -> None:
    """py-spy on `pid` for `seconds` while `run` (a wrk run one second longer) loads it.
    py-spy is left unpinned: pinned beside wrk it is preempted mid-read and cuts many more
    stacks short; what it takes from the node's CPU changes no share much."""
    command = [spy, "record", "--pid", str(pid), "--format", "raw", "--nonblocking", "--threads",
               "--rate", str(rate), "--duration", str(seconds), "--output", str(out)]
    spy_proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
    try:
        run(seconds + 1)
        _, err = spy_proc.communicate(timeout=SPY_GRACE)
    finally:
        if spy_proc.poll() is None:
            spy_proc.kill()
            spy_proc.wait()
    if spy_proc.returncode != 0 or not out.exists():
        message = err.decode(errors="replace").split("Stack backtrace:")[0].strip()
        raise SpyError(f"py-spy failed ({spy_proc.returncode}): {message[:400]}")


def table(rows: Sequence[Profile], loop_thread: int,
          rate: str = "req/s (plain runs, median)") -> str:
    parts = [stack_rules.by_category(row.charged()) for row in rows]
    totals = [sum(row.cpu_us().values()) for row in rows]
    lines = ["| CPU µs per request (share) | " + " | ".join(r.name for r in rows) + " |",
             "|---|" + "---|" * len(rows)]
    for name in stack_rules.CATEGORIES:
        cells = [f"{found.get(name, 0.0):.1f} ({found.get(name, 0.0) / total:.0%})"
                 for found, total in zip(parts, totals, strict=True)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")

    def each(show: Callable[[Profile], str]) -> str:
        return " | ".join(show(row) for row in rows)

    def split(row: Profile) -> str:
        cpu = row.cpu_us()
        loop = cpu.get(loop_thread, 0.0)
        return f"{loop:.1f} / {sum(cpu.values()) - loop:.1f}"

    def counts(row: Profile) -> str:
        found = row.samples
        loop = found.samples(loop_thread)
        return (f"{loop} / {found.samples() - loop} ({found.partial}); "
                f"{found.samples(waiting=True)}")

    lines += [
        "| **whole request** | " + " | ".join(f"**{total:.1f}**" for total in totals) + " |",
        "| of it, the loop's thread / the others | " + each(split) + " |",
        f"| {rate} | " + each(lambda r: f"{statistics.median(r.rps):,.0f}") + " |",
        "| samples: loop / others (cut short); waiting, left out | " + each(counts) + " |",
    ]
    return "\n".join(lines)


def start_rows(server: Server, workdir: Path) -> list[Row]:
    rows: list[Row] = []
    for name, build in NODE_ROWS:
        load = build(server)
        answer = probe(server, load)
        script = workdir / f"row-{len(rows)}.lua"
        script.write_text(lua_script(load, secrets.token_hex(4)))
        rows.append(Row(name=name, load=load, script=script))
        print(f"  {name}: probe {answer}", flush=True)
    return rows


def run_rounds(args: argparse.Namespace, spy: str, wrk: str, pinning: Pinning, server: Server,
               rows: list[Row], keep: Path) -> None:
    for index, row in enumerate(each_round(rows, args.rounds)):
        run = wrk_runner(wrk, pinning.load, server.rpc_url, row.script, args.connections)
        if args.warmup:
            run(args.warmup)
        threads, result = plain(run, server, args.duration, pinning.server_cpu)
        row.thread_us.append(threads)
        row.rps.append(result.rps)
        out = keep / f"{row.name.split()[0].replace('/', '-')}-{index}"
        sampled(spy, server.pid, args.duration, args.rate, out, run)
        for line in out.read_text().splitlines():
            row.samples.add(line)
        wrong = unexpected(result, row.load.expect_status)
        print(f"  {row.name}: {result.rps:,.0f} req/s, {sum(threads.values()):.0f} µs CPU/req "
              f"({threads.get(server.pid, 0.0):.0f} on the loop's thread)"
              + (f", {wrong} unexpected answers" if wrong else ""), flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    spy = find_py_spy()
    if spy is None:
        print("error: py-spy not found: `make venv` installs it (dev extras), or "
              "`pip install py-spy`", file=sys.stderr)
        return 2
    try:
        wrk, _ = find_wrk()
    except WrkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    pinning = plan_pinning()
    print(f"request profile: {args.rounds} round(s) x (plain {args.duration} s + sampled "
          f"{args.duration} s) per row ({args.warmup} s warm-up), {args.connections} "
          f"connections, py-spy at {args.rate} Hz")
    print(f"  pinning: {pinning.note}; machine: {cpu_model()}", flush=True)
    if args.raw:
        args.raw.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="synthorg-profile-") as tmp:
        server = start_node_uvicorn(Path(tmp), pinning.server, "node", plain_config())
        try:
            rows = start_rows(server, Path(tmp))
            run_rounds(args, spy, wrk, pinning, server, rows, args.raw or Path(tmp))
        except SpyError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        finally:
            server.stop()
    print("\n" + table(rows, server.pid))
    for row in rows:
        print("\n" + deciding_frames(row, args.frames), end="")
    return 0


def deciding_frames(row: Profile, top: int) -> str:
    """The frames that decided the most of each part of `row` (of "other": its innermost
    frames, for a rule to add), µs per request each."""
    by_part: dict[str, list[tuple[float, str]]] = {}
    for (name, frame), us in row.charged().items():
        by_part.setdefault(name, []).append((us, frame))
    lines = []
    for name in stack_rules.CATEGORIES:
        shown = top if name != stack_rules.OTHER else max(top, 4)
        found = sorted(by_part.get(name, []), reverse=True)[:shown]
        if found:
            lines.append(f"{row.name}, {name}: "
                         + ", ".join(f"{frame} {us:.1f}" for us, frame in found))
    return "".join(line + "\n" for line in lines)


if __name__ == "__main__":
    sys.exit(main())
