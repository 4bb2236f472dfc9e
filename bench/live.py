"""Live benchmark (`make bench`): real servers on loopback under wrk, in one run.

The floor (a bare Starlette JSON-RPC echo), the official a2a-sdk servers (0.3 for tasks/get
and message/send; 1.3.0 for A2A 1.0 GetTask, run by `.venv-sdk1`, `make sdk1-venv`) and this
node (on SQLite; on PostgreSQL with one replica and with two), each pinned to one CPU while wrk
runs on another (PostgreSQL's own server is not pinned); then hostile 100 MiB bodies against
the node. Prints each row (req/s, p50, p99, mean, p99/mean, ratios against the floor and
against a2a-sdk for the same method), a summary, and the goal checks as PASS/FAIL lines. Exits
0 unless something could not run.

    .venv/bin/python -m bench.live [--duration S] [--warmup S] [--quick] [--threads 1|2]
                                   [--connections N] [--json PATH]

The push rows (deliveries/s to a local receiver, none lost across kill -9) run last; alone:
`python -m bench.push [--quick]`. The in-process pipeline benchmark is still
`python -m bench.pipeline`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import re
import secrets
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import flood
from bench import hostile as hostile_body
from bench import push as push_bench
from bench.hostile import HostileResult
from bench.report import Check, Row, checks, hostile_table, notes, table, to_json
from bench.scenarios import SCENARIOS, Scenario, probe
from bench.servers import Server
from bench.system import Pinning, cpu_busy_seconds, cpu_model, cpu_seconds, plan_pinning
from bench.wrk import WrkError, WrkResult, find_wrk, lua_script, run_wrk, wrk_version

TASK_CREATED = "a2a.task.created"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.live", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=10, metavar="S",
                        help="seconds of each measured run (default 10)")
    parser.add_argument("--warmup", type=int, default=3, metavar="S",
                        help="seconds of load before each measured run, not counted (default 3)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 2 s measured, 1 s warm-up")
    parser.add_argument("--connections", type=int, default=32, metavar="N",
                        help="wrk connections (default 32)")
    parser.add_argument("--threads", type=int, default=1, choices=(1, 2),
                        help="wrk threads (default 1)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results here")
    parser.add_argument("--only", metavar="WORDS",
                        help="run only the rows whose name contains one of these "
                        "comma-separated words (e.g. node-pg,a2a-sdk)")
    args = parser.parse_args(argv)
    if args.quick:
        args.duration, args.warmup = 2, 1
    if args.duration < 1 or args.warmup < 0:
        parser.error("--duration must be at least 1 and --warmup at least 0")
    if args.connections < args.threads:
        parser.error("--connections must be at least --threads")
    return args


class Bench:
    def __init__(self, args: argparse.Namespace, wrk: str, pinning: Pinning,
                 workdir: Path) -> None:
        self.args = args
        self.wrk = wrk
        self.pinning = pinning
        self.workdir = workdir
        self.rows: list[Row] = []
        self.hostile: dict[str, list[HostileResult]] = {}
        self.failures: list[str] = []

    def run(self) -> None:
        words = [w.strip() for w in (self.args.only or "").split(",") if w.strip()]
        chosen = [s for s in SCENARIOS if not words or any(w in s.name for w in words)]
        for launcher, grouped in itertools.groupby(chosen, key=lambda s: s.launcher):
            group = list(grouped)
            print(f"\n== {launcher.name}", flush=True)
            try:
                server = launcher.start(self.workdir, self.pinning.server)
            except Exception as exc:
                reason = f"{launcher.name} did not start: {exc}"
                print(f"  {reason}", flush=True)
                self.failures.append(reason)
                self.rows += [self._row(s, error=reason) for s in group]
                continue
            try:
                print(f"  listening on 127.0.0.1:{server.port} (pid {server.pid})", flush=True)
                for scenario in group:
                    if not server.alive():
                        reason = f"{server.name} (a process of it) exited"
                        self.failures.append(f"{scenario.name}: {reason}")
                        self.rows.append(self._row(scenario, error=reason))
                        continue
                    self.rows.append(self.scenario(scenario, server))
                if server.kind == "node" and server.hostile and server.alive():
                    self.hostile_bodies(server)
            finally:
                server.stop()

    def _row(self, scenario: Scenario, **fields: Any) -> Row:
        return Row(scenario.name, scenario.launcher.name, scenario.launcher.kind,
                   scenario.method, **fields)

    def scenario(self, scenario: Scenario, server: Server) -> Row:
        print(f"  {scenario.name}: ", end="", flush=True)
        row = self._row(scenario)
        try:
            load = scenario.load(server)
            row.expect_status = load.expect_status
            row.probe = probe(server, load)
            print(f"probe {row.probe}; ", end="", flush=True)
            slug = re.sub(r"[^a-z0-9]+", "-", scenario.name.lower()).strip("-")
            script = self.workdir / f"{slug}.lua"
            if self.args.warmup:
                print(f"warm-up {self.args.warmup} s, ", end="", flush=True)
                script.write_text(lua_script(load, secrets.token_hex(4)))
                self._wrk(server, script, self.args.warmup)
            print(f"measuring {self.args.duration} s ... ", end="", flush=True)
            script.write_text(lua_script(load, secrets.token_hex(4)))
            count_tasks = server.kind == "node" and scenario.method == "message/send"
            created_before = server.count_events(TASK_CREATED) if count_tasks else 0
            self._measure(row, server, script)
            assert row.result is not None
            print(f"{row.result.rps:.0f} req/s", end="", flush=True)
            if count_tasks:
                time.sleep(0.2)  # the last answers' log lines
                row.tasks_created = server.count_events(TASK_CREATED) - created_before
                print(f", {row.tasks_created} tasks created (the window's answers plus those "
                      "in flight at its edges)", end="")
            print(flush=True)
        except Exception as exc:
            row.result = None
            row.error = f"{type(exc).__name__}: {exc}"
            print(f"could not run: {row.error}", flush=True)
            if server.proc.poll() is not None:
                print(f"    the server exited ({server.proc.returncode}); its log ends:\n"
                      + _indent(server.log_tail(), "      "), flush=True)
            self.failures.append(f"{scenario.name}: {row.error}")
        return row

    def _measure(self, row: Row, server: Server, script: Path) -> None:
        """The measured wrk run, with the CPU time of the server and of others on its CPU."""
        cpu = self.pinning.server_cpu
        used_before = sum(cpu_seconds(pid) for pid in server.pids)
        busy_before = cpu_busy_seconds(cpu) if cpu is not None else (0.0, 0.0)
        result = self._wrk(server, script, self.args.duration)
        used = sum(cpu_seconds(pid) for pid in server.pids) - used_before
        row.server_cpu = used / result.seconds
        if cpu is not None:
            busy_after, stolen_after = cpu_busy_seconds(cpu)
            others = busy_after - busy_before[0] - used + stolen_after - busy_before[1]
            row.others_cpu = max(0.0, others) / result.seconds
        if not server.alive():
            raise RuntimeError("the server (a process of it) exited")
        row.result = result

    def _wrk(self, server: Server, script: Path, seconds: int) -> WrkResult:
        # One wrk thread at least per replica: each thread keeps its connections to one port.
        threads = max(self.args.threads, len(server.ports))
        return run_wrk(self.wrk, self.pinning.load, server.rpc_url, script,
                       threads=threads, connections=max(self.args.connections, threads),
                       seconds=seconds)

    def hostile_bodies(self, server: Server) -> None:
        print("  hostile bodies (100 MiB each): ", end="", flush=True)
        try:
            results = hostile_body.run_all(server.port, server.pid, server.headers)
        except Exception as exc:
            reason = f"{server.name} hostile bodies: {type(exc).__name__}: {exc}"
            print(f"could not run: {reason}", flush=True)
            self.failures.append(reason)
            return
        self.hostile[server.name] = results
        print(", ".join(f"{','.join(map(str, h.statuses)) or 'no answer'} "
                        f"(+{h.growth_mib:.2f} MiB)" for h in results), flush=True)


def run_flood(args: argparse.Namespace, wrk: str, pinning: Pinning, workdir: Path,
              failures: list[str]) -> Check | None:
    """The flooding-peer row (bench.flood), unless --only leaves it out."""
    words = [w.strip() for w in (args.only or "").split(",") if w.strip()]
    if words and not any(w in "node-flood: polite beside a flooding peer" for w in words):
        return None
    print("\n== node-flood (2 workers): a polite peer alone, then beside a flooding peer",
          flush=True)
    try:
        result = flood.run(wrk, pinning, workdir, args.duration, args.warmup)
    except Exception as exc:
        reason = f"node-flood: {type(exc).__name__}: {exc}"
        print(f"  could not run: {reason}", flush=True)
        failures.append(reason)
        return None
    for line in result.lines():
        print(line, flush=True)
    return result.check()


PUSH_ROW = "node-push: deliveries to a local receiver, and across kill -9"


def run_push(args: argparse.Namespace, workdir: Path, failures: list[str]) -> list[Check]:
    """The push rows (bench.push): a burst's deliveries/s, then none lost across kill -9."""
    words = [w.strip() for w in (args.only or "").split(",") if w.strip()]
    if words and not any(w in PUSH_ROW for w in words):
        return []
    tasks = push_bench.QUICK_TASKS if args.quick else push_bench.TASKS
    print(f"\n== {PUSH_ROW} ({tasks} parked tasks x {push_bench.CONFIGS} configs)", flush=True)
    try:
        result = push_bench.run(workdir, tasks, push_bench.CONFIGS)
    except Exception as exc:
        reason = f"node-push: {type(exc).__name__}: {exc}"
        print(f"  could not run: {reason}", flush=True)
        failures.append(reason)
        return []
    for line in result.lines():
        print(line, flush=True)
    return result.checks()


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _terminated(signum: int, _frame: object) -> None:
    print("\nterminated: stopping servers, removing temporary data", file=sys.stderr)
    raise SystemExit(128 + signum)  # unwinds like Ctrl-C


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminated)
    try:
        wrk, how = find_wrk()
    except WrkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    pinning = plan_pinning()
    settings = {
        "wrk": wrk_version(wrk), "wrk_found": how, "threads": args.threads,
        "connections": args.connections, "duration_s": args.duration, "warmup_s": args.warmup,
        "pinning": pinning.note, "cpu": cpu_model(), "python": platform.python_version(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    print("live bench: floor, a2a-sdk and this node on 127.0.0.1 under wrk")
    print(f"  wrk: {settings['wrk']} ({how})")
    print(f"  load: {args.connections} connections, {args.threads} wrk thread(s), "
          f"{args.warmup} s warm-up + {args.duration} s measured per row")
    print(f"  pinning: {pinning.note}")
    print(f"  machine: {settings['cpu']}, Python {settings['python']}", flush=True)

    with tempfile.TemporaryDirectory(prefix="synthorg-bench-") as tmp:
        bench = Bench(args, wrk, pinning, Path(tmp))
        flood_check = None
        push_checks: list[Check] = []
        try:
            bench.run()
            flood_check = run_flood(args, wrk, pinning, Path(tmp), bench.failures)
            push_checks = run_push(args, Path(tmp), bench.failures)
        except KeyboardInterrupt:
            print("\ninterrupted: servers stopped, temporary data removed", file=sys.stderr)
            return 130

    found = checks(bench.rows, bench.hostile) + ([flood_check] if flood_check else [])
    found += push_checks
    print("\n== summary (x floor, x sdk: req/s ratios; wrk cpu, srv cpu: CPU time over wall "
          "time, 100% = one core;\n   others: the server's CPU taken by other processes or the "
          "hypervisor meanwhile; req/cpu-s: requests per server CPU-second)")
    print(table(bench.rows))
    for server, results in bench.hostile.items():
        print(f"\n{server}:")
        print(hostile_table(results))
    for note in notes(bench.rows):
        print(f"note: {note}")
    print("\n== goals")
    for check in found:
        print(check.line())
    if args.json:
        args.json.write_text(json.dumps(to_json(settings, bench.rows, bench.hostile, found),
                                        indent=2) + "\n")
        print(f"\nresults written to {args.json}")
    if bench.failures:
        print("\nsomething could not run:")
        for failure in bench.failures:
            print(f"  {failure}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
