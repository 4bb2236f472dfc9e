"""Scale out on one machine (`make bench-scale`): one node with `--workers 2` against
`--workers 1`, nothing pinned, wrk on the same cores as the node (as one machine serving and
generating its own load would be).

Rows: tasks/get (reads) and message/send (durable writes through the one SQLite writer) on
each node, in alternating rounds (`bench.rounds`): medians and spreads of req/s, p50/p99 and
the node's CPU per request (every process of it, /proc utime + stime, over the requests
answered). Then each process's resident memory: the supervisor and every worker.

    .venv/bin/python -m bench.scale_out [--rounds N] [--duration S] [--warmup S] [--quick]
                                        [--connections N] [--threads N] [--json PATH]
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import secrets
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.rounds import (
    RowSamples,
    add_load_options,
    each_round,
    finish_load_options,
    measure,
    unexpected,
)
from bench.scenarios import probe, send, tasks_get
from bench.server_choice import plain_config, start_node_uvicorn
from bench.servers import Server, stop_process
from bench.system import PROC, cpu_model, process_tree
from bench.wrk import Load, WrkError, WrkResult, find_wrk, lua_script, run_wrk

WORKER_COUNTS = (1, 2)


@dataclass
class Row:
    workers: int
    method: str
    server: Server
    load: Load
    script: Path
    samples: RowSamples

    @property
    def key(self) -> str:
        return f"workers {self.workers}: {self.method}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_out", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_load_options(parser, duration=5, warmup=1, quick=(2, 1, 0))
    parser.add_argument("--connections", type=int, default=32, metavar="N")
    parser.add_argument("--threads", type=int, default=2, metavar="N", help="wrk threads")
    parser.add_argument("--json", type=Path, metavar="PATH")
    return finish_load_options(parser, parser.parse_args(argv))


def process_rss(server: Server) -> list[tuple[str, float]]:
    """(role, MiB) of every process of the node: the supervisor first, then its workers
    (multiprocessing's resource tracker, which serves nothing, is named as such)."""
    found = []
    for pid in process_tree(server.pid):
        try:
            cmdline = (PROC / str(pid) / "cmdline").read_bytes()
            status = (PROC / str(pid) / "status").read_text()
        except OSError:
            continue
        rss = next(int(line.split()[1]) for line in status.splitlines()
                   if line.startswith("VmRSS:"))
        if pid == server.pid:
            role = "supervisor" if len(process_tree(server.pid)) > 1 else "node (one process)"
        elif b"resource_tracker" in cmdline:
            role = "resource tracker"
        else:
            role = "worker"
        found.append((role, rss / 1024))
    return found


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda signum, _: sys.exit(128 + signum))
    try:
        wrk, _ = find_wrk()
    except WrkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"scale-out: --workers {' vs '.join(map(str, WORKER_COUNTS))}, {args.rounds} rounds x "
          f"{args.duration} s per row, {args.connections} connections, {args.threads} wrk "
          f"threads, nothing pinned; {cpu_model()}, Python {platform.python_version()}",
          flush=True)
    servers: list[Server] = []
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="synthorg-scale-") as tmp:
        workdir = Path(tmp)
        try:
            for workers in WORKER_COUNTS:
                server = start_node_uvicorn(workdir, [], f"node-w{workers}", plain_config(),
                                            ("--workers", str(workers)))
                servers.append(server)
                for method, build in (("tasks/get", tasks_get), ("message/send", send)):
                    load = build(server)
                    print(f"  workers {workers}: {method}: probe {probe(server, load)}",
                          flush=True)
                    script = workdir / f"w{workers}-{len(rows)}.lua"
                    script.write_text(lua_script(load, secrets.token_hex(4)))
                    rows.append(Row(workers, method, server, load, script,
                                    RowSamples(f"workers {workers}: {method}")))

            def wrk_run(row: Row, seconds: int) -> WrkResult:
                return run_wrk(wrk, [], row.server.rpc_url, row.script, threads=args.threads,
                               connections=args.connections, seconds=seconds)

            for row in each_round(rows, args.rounds):
                if args.warmup:
                    wrk_run(row, args.warmup)
                sample = measure(row.server, functools.partial(wrk_run, row, args.duration))
                row.samples.samples.append(sample)
                row.samples.unexpected += unexpected(sample.result, 200)
                print(f"  {row.key}: {sample.result.rps:,.0f} req/s, "
                      f"{sample.cpu_us_per_request:.0f} us CPU/req", flush=True)
            memory = {s.name: process_rss(s) for s in servers}
        finally:
            for server in servers:
                stop_process(server.proc)

    base = {r.method: r.samples.rps().median for r in rows if r.workers == 1}
    print("\n| workers | row | req/s median [min-max] | x 1 worker | CPU us/req median "
          "[min-max] | p50 ms | p99 ms | unexpected |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        rps = row.samples.rps()
        print(f"| {row.workers} | {row.method} | {rps.show()} | "
              f"{rps.median / base[row.method]:.2f} | {row.samples.cpu_us().show()} | "
              f"{row.samples.latency_ms('p50').median:.2f} | "
              f"{row.samples.latency_ms('p99').median:.2f} | {row.samples.unexpected} |")
    print("\n| node | process | RSS MiB |\n|---|---|---|")
    for name, processes in memory.items():
        for role, mib in processes:
            print(f"| {name} | {role} | {mib:.0f} |")
    if args.json:
        args.json.write_text(json.dumps({
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "rows": [
                {"workers": r.workers, "method": r.method, "unexpected": r.samples.unexpected,
                 "rps": [s.result.rps for s in r.samples.samples],
                 "cpu_us_per_request": [s.cpu_us_per_request for s in r.samples.samples],
                 "p50_ms": [s.result.latency_us["p50"] / 1000 for s in r.samples.samples],
                 "p99_ms": [s.result.latency_us["p99"] / 1000 for s in r.samples.samples]}
                for r in rows],
            "rss_mib": memory}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
