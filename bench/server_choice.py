"""Choose the HTTP server by measurement (`make bench-servers`): candidates under wrk, one run.

Candidates, each pinned to one CPU while wrk runs on the other:

- uvicorn with the node's own protocol class (`synthorg.http`), as the node serves today;
- uvicorn with its own httptools protocol (what the node's limits cost);
- Granian (Rust HTTP, one worker, one single-threaded runtime, uvloop) on its ASGI interface,
  and on its own RSGI interface for the floor;
- a bare httptools + uvloop protocol, no server library: the floor of Python HTTP here; for
  the node's rows, the same protocol running its ASGI app with a minimal scope
  (`BareAsgiProtocol`, none of the node protocol's limits): the cost ceiling of serving the
  gateway without an ASGI server layer;
- for reference, the live bench's floor (`bench.floor_app`: a Starlette echo on uvicorn), the
  one the performance goals are ratios to.

Each serves the floor (a bare JSON-RPC echo, `bench.server_apps`); both uvicorns, Granian's
ASGI and the bare protocol also serve this node, for its rows (tasks/get through the three
gates, a 401 refusal, a durable message/send). Every row is measured once per round, in an
order that rotates, for several rounds (`bench.rounds`): medians and spreads. Server CPU per
request is the server's utime + stime over the run (/proc, every process of it) divided by
the requests answered. After the table, each node's tasks/get and 401 against the live floor,
as the goals put them (tasks/get >= 0.5x, 401 >= 0.8x).

Then the hostile-condition limits (`bench.limit_probes`) against the node under each server,
with small limits in its config (Granian given its nearest options: a header read timeout, its
smallest buffer, a bound on concurrent requests).

    .venv/bin/python -m bench.server_choice [--rounds N] [--duration S] [--warmup S] [--quick]
                                            [--connections N] [--only WORDS] [--no-probes]
                                            [--json PATH]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench import limit_probes
from bench.rounds import (
    RowSamples,
    add_load_options,
    each_round,
    finish_load_options,
    measure,
    unexpected,
)
from bench.scenarios import echo, probe, refused, send, tasks_get
from bench.serve import STARTED
from bench.servers import (
    NODE_STARTED,
    ROOT,
    START_TIMEOUT,
    Kind,
    Server,
    ServerError,
    launch,
    stop_process,
)
from bench.system import Pinning, cpu_model, plan_pinning, rss_kib
from bench.wrk import Load, WrkError, WrkResult, find_wrk, lua_script, run_wrk, wrk_version

PEER = "bench-peer"
# Granian as a fair candidate for one pinned CPU: one worker process, one Rust runtime thread
# in single-threaded mode, the same event loop as uvicorn's, HTTP/1.1 only, no WebSocket.
GRANIAN_BASE = ("--host", "127.0.0.1", "--workers", "1", "--runtime-threads", "1",
                "--runtime-mode", "st", "--loop", "uvloop", "--http", "1", "--no-ws",
                "--log-level", "warning", "--backlog", "2048")


def granian_command(interface: str, target: str, port: int, factory: bool = False,
                    extra: tuple[str, ...] = ()) -> list[str]:
    """`python -m granian` serving `target` (module:attribute) on `interface` and `port`."""
    return [sys.executable, "-m", "granian", "--interface", interface, *GRANIAN_BASE,
            "--port", str(port), *extra, *(["--factory"] if factory else []), target]


def granian_probe_options(limits: limit_probes.Limits) -> tuple[str, ...]:
    """Granian's nearest options to the node's limits: its header read timeout (ms), its
    smallest HTTP/1 buffer, and a bound on concurrent requests (there is none on connections
    or on a body's time)."""
    return ("--http1-header-read-timeout", str(max(1, round(limits.header_timeout * 1000))),
            "--http1-buffer-size", str(max(8192, limits.max_header_bytes)),
            "--backpressure", str(limits.max_connections))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch_on_port(name: str, kind: Kind, command: list[str], env: dict[str, str], log: Path,
                   port: int) -> Server:
    """Start a server that prints no start-up event: ready once its port accepts."""
    with log.open("wb") as sink:
        proc = subprocess.Popen(command, env=env, cwd=ROOT, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=sink)
    server = Server(name, kind, proc, port, log)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise ServerError(f"{name} did not listen on {port}: {server.log_tail()}")
        time.sleep(0.05)


def node_data_dir(workdir: Path, label: str, config: str) -> tuple[Path, dict[str, str]]:
    """A fresh data dir with `config` and the bench's peer added through the CLI; the peer's
    headers."""
    data_dir = workdir / label
    data_dir.mkdir(mode=0o700)
    (data_dir / "config.yaml").write_text(config)
    secret = secrets.token_urlsafe(32)
    added = subprocess.run(
        [sys.executable, "-m", "synthorg.cli.main", "peers", "add", PEER,
         "--endpoint", "http://127.0.0.1:9"],
        input=secret.encode(), env={**os.environ, "SYNTHORG_DATA_DIR": str(data_dir)},
        cwd=ROOT, capture_output=True, timeout=60)
    if added.returncode != 0:
        raise ServerError("peers add failed: " + added.stderr.decode(errors="replace"))
    return data_dir, {"X-A2A-Peer-Name": PEER, "X-API-Key": secret}


def plain_config() -> str:
    return f"a2a:\n  enabled: true\n  allowed_peers: [{PEER}]\n"


def start_node_uvicorn(workdir: Path, pin: list[str], label: str, config: str,
                       args: tuple[str, ...] = ()) -> Server:
    """The node as it serves today: `python -m synthorg.api` (`args` appended)."""
    data_dir, headers = node_data_dir(workdir, label, config)
    env = {**os.environ, "SYNTHORG_DATA_DIR": str(data_dir)}
    command = [*pin, sys.executable, "-m", "synthorg.api", "--host", "127.0.0.1", "--port", "0",
               *args]
    server = launch(label, "node", command, env, workdir / f"{label}.log", NODE_STARTED)
    server.headers = headers
    return server


def start_node_granian(workdir: Path, pin: list[str], label: str, config: str,
                       extra: tuple[str, ...] = ()) -> Server:
    data_dir, headers = node_data_dir(workdir, label, config)
    port = free_port()
    env = {**os.environ, "SYNTHORG_DATA_DIR": str(data_dir), "SYNTHORG_BACKEND_PORT": str(port)}
    command = [*pin, *granian_command("asgi", "bench.server_apps:node_app", port,
                                      factory=True, extra=extra)]
    server = launch_on_port(label, "node", command, env, workdir / f"{label}.log", port)
    server.headers = headers
    return server


def start_node_uvicorn_stock(workdir: Path, pin: list[str], label: str, config: str) -> Server:
    """The node's app under uvicorn's own httptools protocol (none of the node's limits)."""
    data_dir, headers = node_data_dir(workdir, label, config)
    port = free_port()
    env = {**os.environ, "SYNTHORG_DATA_DIR": str(data_dir), "SYNTHORG_BACKEND_PORT": str(port)}
    command = [*pin, sys.executable, "-m", "uvicorn", "--factory", "--host", "127.0.0.1",
               "--port", str(port), "--http", "httptools", "--loop", "uvloop", "--ws", "none",
               "--log-level", "warning", "--no-access-log", "--no-proxy-headers",
               "bench.server_apps:node_app"]
    server = launch_on_port(label, "node", command, env, workdir / f"{label}.log", port)
    server.headers = headers
    return server


def start_node_bare(workdir: Path, pin: list[str], label: str, config: str) -> Server:
    """The node's app on the bare httptools + uvloop protocol (`bench.server_apps bare-node`),
    its lifespan started before it listens."""
    data_dir, headers = node_data_dir(workdir, label, config)
    env = {**os.environ, "SYNTHORG_DATA_DIR": str(data_dir)}
    command = [*pin, sys.executable, "-m", "bench.server_apps", "bare-node"]
    server = launch(label, "node", command, env, workdir / f"{label}.log", STARTED)
    server.headers = headers
    return server


def start_live_floor(workdir: Path, pin: list[str], label: str) -> Server:
    """The live bench's floor (`python -m bench.floor_app`), as `bench.live` serves it."""
    command = [*pin, sys.executable, "-m", "bench.floor_app"]
    server = launch(label, "floor", command, dict(os.environ), workdir / f"{label}.log", STARTED)
    server.headers = {"X-A2A-Peer-Name": PEER, "X-API-Key": secrets.token_urlsafe(32)}
    return server


def start_echo_module(workdir: Path, pin: list[str], label: str, entry: str) -> Server:
    command = [*pin, sys.executable, "-m", "bench.server_apps", entry]
    server = launch(label, "floor", command, dict(os.environ), workdir / f"{label}.log", STARTED)
    server.headers = {"X-A2A-Peer-Name": PEER, "X-API-Key": secrets.token_urlsafe(32)}
    return server


def start_echo_granian(workdir: Path, pin: list[str], label: str, interface: str) -> Server:
    port = free_port()
    target = "bench.server_apps:asgi_echo" if interface == "asgi" else "bench.server_apps:rsgi_echo"
    server = launch_on_port(label, "floor", [*pin, *granian_command(interface, target, port)],
                            dict(os.environ), workdir / f"{label}.log", port)
    server.headers = {"X-A2A-Peer-Name": PEER, "X-API-Key": secrets.token_urlsafe(32)}
    return server


Starter = Callable[[Path, list[str]], Server]
LIVE_FLOOR = "live floor: Starlette on uvicorn"
# The goals' ratios to the live floor (throughput, so the floor's CPU per request over the
# row's): the node's tasks/get at least half the floor's, its 401 at least 0.8 of it.
GOALS = (("tasks/get", 0.5), ("401 wrong key", 0.8))


@dataclass(frozen=True)
class Candidate:
    name: str
    floor: Starter
    node: Starter | None = None  # serves this node's rows


CANDIDATES = (
    Candidate("uvicorn + node protocol",
              lambda w, p: start_echo_module(w, p, "uvicorn-echo", "uvicorn-echo"),
              lambda w, p: start_node_uvicorn(w, p, "uvicorn-node", plain_config())),
    Candidate("uvicorn stock httptools",
              lambda w, p: start_echo_module(w, p, "uvicorn-stock-echo", "uvicorn-stock-echo"),
              lambda w, p: start_node_uvicorn_stock(w, p, "uvicorn-stock-node", plain_config())),
    Candidate("granian asgi",
              lambda w, p: start_echo_granian(w, p, "granian-asgi-echo", "asgi"),
              lambda w, p: start_node_granian(w, p, "granian-node", plain_config())),
    Candidate("granian rsgi", lambda w, p: start_echo_granian(w, p, "granian-rsgi-echo", "rsgi")),
    Candidate("httptools+uvloop bare",
              lambda w, p: start_echo_module(w, p, "bare-echo", "bare-echo"),
              lambda w, p: start_node_bare(w, p, "bare-node", plain_config())),
    Candidate(LIVE_FLOOR, lambda w, p: start_live_floor(w, p, "live-floor")),
)

NODE_ROWS: tuple[tuple[str, Callable[[Server], Load]], ...] = (
    ("tasks/get", tasks_get), ("401 wrong key", refused), ("message/send", send))


@dataclass
class Row:
    candidate: str
    row: str
    server: Server
    load: Load
    script: Path
    samples: RowSamples = field(default_factory=lambda: RowSamples(""))

    @property
    def key(self) -> str:
        return f"{self.candidate}: {self.row}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.server_choice", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_load_options(parser, duration=5, warmup=1, quick=(2, 1, 0))
    parser.add_argument("--connections", type=int, default=32, metavar="N",
                        help="wrk connections (default 32)")
    parser.add_argument("--only", metavar="WORDS",
                        help="only the candidates whose name contains one of these "
                        "comma-separated words (e.g. 'node protocol,bare,live')")
    parser.add_argument("--no-probes", action="store_true",
                        help="skip the hostile-condition probes")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results here")
    return finish_load_options(parser, parser.parse_args(argv))


def chosen(only: str | None) -> tuple[Candidate, ...]:
    words = [w.strip() for w in (only or "").split(",") if w.strip()]
    return tuple(c for c in CANDIDATES if not words or any(w in c.name for w in words))


def start_rows(workdir: Path, pinning: Pinning, servers: list[Server],
               candidates: tuple[Candidate, ...] = CANDIDATES) -> list[Row]:
    rows: list[Row] = []
    for candidate in candidates:
        floor = candidate.floor(workdir, pinning.server)
        servers.append(floor)
        loads = [("floor: echo", echo(floor), floor)]
        if candidate.node is not None:
            node = candidate.node(workdir, pinning.server)
            servers.append(node)
            loads += [(name, build(node), node) for name, build in NODE_ROWS]
        for name, load, server in loads:
            answer = probe(server, load)
            script = workdir / f"{server.name}-{len(rows)}.lua"
            script.write_text(lua_script(load, secrets.token_hex(4)))
            row = Row(candidate.name, name, server, load, script)
            row.samples.key = row.key
            rows.append(row)
            print(f"  {row.key}: probe {answer}", flush=True)
    return rows


def run_rounds(args: argparse.Namespace, wrk: str, pinning: Pinning, rows: list[Row]) -> None:
    def wrk_run(row: Row, seconds: int) -> WrkResult:
        return run_wrk(wrk, pinning.load, row.server.rpc_url, row.script, threads=1,
                       connections=args.connections, seconds=seconds)

    for row in each_round(rows, args.rounds):
        if args.warmup:
            wrk_run(row, args.warmup)
        sample = measure(row.server, functools.partial(wrk_run, row, args.duration),
                         pinning.server_cpu)
        row.samples.samples.append(sample)
        row.samples.unexpected += unexpected(sample.result, row.load.expect_status)
        print(f"  {row.key}: {sample.result.rps:,.0f} req/s, "
              f"{sample.cpu_us_per_request:.0f} us CPU/req, others on its CPU "
              f"{sample.others:.0%}", flush=True)


def table(rows: list[Row], rss_after: dict[str, float]) -> str:
    baseline = {r.row: r.samples for r in rows if r.candidate == CANDIDATES[0].name}
    lines = ["| server | row | CPU us/req median [min-max] | x uvicorn | req/s median "
             "[min-max] | req/s, quiet rounds (n) | p50 ms | p99 ms | others on its CPU | "
             "unexpected | RSS MiB |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        rps, cpu = row.samples.rps(), row.samples.cpu_us()
        quiet, count = row.samples.quiet_rps()
        base = baseline.get(row.row)
        ratio = ratio_of(cpu.median, base.cpu_us().median) if base else float("nan")
        lines.append(
            f"| {row.candidate} | {row.row} | {cpu.show()} | {ratio:.2f} | {rps.show()} | "
            f"{quiet.show()} ({count}) | "
            f"{row.samples.latency_ms('p50').median:.2f} | "
            f"{row.samples.latency_ms('p99').median:.2f} | "
            f"{row.samples.others().median:.0%} | {row.samples.unexpected} | "
            f"{rss_after.get(row.server.name, float('nan')):.0f} |")
    return "\n".join(lines)


def goals_table(rows: list[Row]) -> str:
    """Each node's goal rows against the live floor, by CPU per request (the floor's over the
    row's: the throughput ratio on one saturated CPU) and by median req/s."""
    floor = next((r.samples for r in rows if r.candidate == LIVE_FLOOR), None)
    if floor is None:
        return ""
    lines = ["| server | row | goal | x floor by CPU/req | x floor by req/s |",
             "|---|---|---|---|---|"]
    for row in rows:
        for name, goal in GOALS:
            if row.row == name:
                by_cpu = ratio_of(floor.cpu_us().median, row.samples.cpu_us().median)
                by_rps = ratio_of(row.samples.rps().median, floor.rps().median)
                verdict = "met" if by_cpu >= goal else "not met"
                lines.append(f"| {row.candidate} | {name} | >= {goal}x | {by_cpu:.2f} "
                             f"({verdict}) | {by_rps:.2f} |")
    return "\n".join(lines)


def ratio_of(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else float("nan")


def run_probes(workdir: Path, only: str | None = None) -> dict[str, list[limit_probes.Outcome]]:
    limits = limit_probes.Limits()
    config = limits.config_yaml(PEER)
    starters: dict[str, Callable[[], Server]] = {
        "uvicorn + node protocol": lambda: start_node_uvicorn(workdir, [], "probe-uvicorn",
                                                              config),
        "uvicorn stock httptools": lambda: start_node_uvicorn_stock(
            workdir, [], "probe-uvicorn-stock", config),
        "granian asgi": lambda: start_node_granian(workdir, [], "probe-granian", config,
                                                   granian_probe_options(limits)),
    }
    names = {c.name for c in chosen(only)}
    found = {}
    for name, start in starters.items():
        if name not in names:
            continue
        server = start()
        try:
            outcomes = limit_probes.run_all(server.port, limits, server.headers)
        finally:
            server.stop()
        found[name] = outcomes
        print(f"  {name}: " + "; ".join(f"{o.limit} {o.what()}"
                                        f"{'' if o.kept else ' (NOT kept)'}" for o in outcomes),
              flush=True)
    return found


def probes_table(found: dict[str, list[limit_probes.Outcome]]) -> str:
    names = list(found)
    lines = ["| limit | expected | " + " | ".join(names) + " |",
             "|---|---|" + "---|" * len(names)]
    for index, outcome in enumerate(next(iter(found.values()))):
        cells = [f"{'kept' if found[n][index].kept else 'NOT kept'}: {found[n][index].what()}"
                 for n in names]
        lines.append(f"| {outcome.limit} | {outcome.expected} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminated)
    try:
        wrk, _ = find_wrk()
    except WrkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    pinning = plan_pinning()
    settings = {"wrk": wrk_version(wrk), "pinning": pinning.note, "cpu": cpu_model(),
                "python": platform.python_version(), "rounds": args.rounds,
                "duration_s": args.duration, "warmup_s": args.warmup,
                "connections": args.connections,
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    print(f"server choice: {args.rounds} rounds x {args.duration} s per row "
          f"({args.warmup} s warm-up each), {args.connections} connections, 1 wrk thread")
    print(f"  pinning: {pinning.note}; machine: {settings['cpu']}, Python "
          f"{settings['python']}", flush=True)
    servers: list[Server] = []
    with tempfile.TemporaryDirectory(prefix="synthorg-servers-") as tmp:
        workdir = Path(tmp)
        try:
            rows = start_rows(workdir, pinning, servers, chosen(args.only))
            run_rounds(args, wrk, pinning, rows)
            rss_after = {s.name: rss_kib(s.pid) / 1024 for s in servers}
            for server in servers:
                if not server.alive():
                    print(f"warning: {server.name} exited during the run", file=sys.stderr)
        finally:
            for server in servers:
                stop_process(server.proc)
        found = {} if args.no_probes else run_probes(workdir, args.only)
    print("\n" + table(rows, rss_after))
    goals = goals_table(rows)
    if goals:
        print("\n" + goals)
    if found:
        print("\n" + probes_table(found))
    if args.json:
        record = {"settings": settings, "rows": [
            {"server": r.candidate, "row": r.row, "unexpected": r.samples.unexpected,
             "rps": [s.result.rps for s in r.samples.samples],
             "cpu_us_per_request": [s.cpu_us_per_request for s in r.samples.samples],
             "others_on_cpu": [s.others for s in r.samples.samples],
             "p50_ms": [s.result.latency_us["p50"] / 1000 for s in r.samples.samples],
             "p99_ms": [s.result.latency_us["p99"] / 1000 for s in r.samples.samples],
             "rss_mib": rss_after.get(r.server.name)} for r in rows],
            "probes": {name: [vars(o) for o in outcomes] for name, outcomes in found.items()}}
        args.json.write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
