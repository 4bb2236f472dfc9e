"""GetTask over each binding, in one run (`make bench-bindings`): throughput under load.

Six targets, every server pinned to one CPU and the load generators to another:

- `grpc node`: this node's gRPC binding (`server.grpc_port`), gates and store included;
- `grpc a2a-sdk 1.3.0`: the official SDK's gRPC server (`bench/sdk1_grpc_app.py`, run with
  `.venv-sdk1`, `make sdk1-venv`) with an InMemoryTaskStore holding the node's task;
- `grpc floor` and `grpc floor uvloop`: a bare grpc.aio server answering a canned Task
  (`bench/grpc_floor_app.py`), what grpcio's asyncio server itself allows on this machine, on
  asyncio's default event loop (the SDK's, run as its examples run it) and on uvloop (the
  node's: uvicorn picks it);
- `json-rpc node` and `rest node`: GetTask of the same task over JSON-RPC (`POST
  /api/v1/a2a/`, A2A-Version 1.0) and over HTTP+JSON (`GET /api/v1/a2a/rest/tasks/{id}`).

Every gRPC server answers the same bytes (the node's Task, handed to the others), checked by a
probe before the load and by the bytes received after it. gRPC load is h2load (Debian package
nghttp2-client; installed with apt-get when missing and run as root) over h2c, each request a
length-prefixed GetTaskRequest; HTTP load is wrk. The targets run in rounds, each round in
another order, so drift and neighbours' load hit them alike; the ratios are taken within each
round (node gRPC / SDK gRPC, REST / JSON-RPC) and their median and spread printed.

    .venv/bin/python -m bench.bindings [--rounds R] [--duration S] [--warmup S]
                                       [--connections N] [--streams M] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx

from bench.rounds import add_load_options, finish_load_options
from bench.serve import RPC_PATH, STARTED
from bench.servers import ROOT, SDK1_PYTHON, SDK1_SETUP, NodeLauncher, Server, launch
from bench.system import Pinning, cpu_model, cpu_seconds, plan_pinning
from bench.wrk import Load, find_wrk, lua_script, run_wrk
from synthorg.gateway.rest import PREFIX as REST_PREFIX
from synthorg.generated.grpc import a2a_pb2 as pb

GET_TASK = "/lf.a2a.v1.A2AService/GetTask"
V1 = {"A2A-Version": "1.0"}
GOAL_GRPC = 2.0  # node gRPC / SDK gRPC
GOAL_REST = 0.9  # REST / JSON-RPC
H2LOAD_HINT = "install it with `sudo apt-get install nghttp2-client` (Debian/Ubuntu)"
NODE_CONFIG = """\
server:
  grpc_port: {port}
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
"""


class BenchError(RuntimeError):
    pass


def find_h2load() -> str:
    """h2load's path; installs nghttp2-client with apt-get when root and it is missing."""
    found = shutil.which("h2load")
    if found:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise BenchError(f"h2load not found on PATH: {H2LOAD_HINT}")
    print("h2load not found: running `apt-get install -y nghttp2-client` (as root)", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "install", "-y", "nghttp2-client"], ["apt-get", "update"],
                    ["apt-get", "install", "-y", "nghttp2-client"]):
        subprocess.run(command, env=env, capture_output=True, check=False)
        found = shutil.which("h2load")
        if found:
            return found
    raise BenchError(f"h2load not found and apt-get could not install it: {H2LOAD_HINT}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def grpc_frame(message: bytes) -> bytes:
    """One gRPC message on the wire: uncompressed flag, 4-byte length, the message."""
    return b"\x00" + len(message).to_bytes(4, "big") + message


@dataclass
class Run:
    rps: float
    latency_mean_us: float
    cpu_per_request_us: float  # the server's CPU time (user + system) per answered request


@dataclass
class Target:
    name: str
    server: Server
    measure: Callable[[Server, float], Run]
    runs: list[Run] = field(default_factory=list)


# -- gRPC load: h2load ----------------------------------------------------------------------

_H2_FINISHED = re.compile(r"finished in ([\d.]+)(s|ms), ([\d.]+) req/s")
_H2_REQUESTS = re.compile(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                          r"(\d+) failed, (\d+) errored, (\d+) timeout")
_H2_DATA = re.compile(r"headers \(space savings [^)]*\), [\d.]+\w* \((\d+)\) data")
_H2_LATENCY = re.compile(r"time for request:\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+"
                         r"([\d.]+)(us|ms|s)")
_UNIT_US = {"us": 1.0, "ms": 1e3, "s": 1e6}


def parse_h2load(text: str, reply_bytes: int) -> tuple[int, float, float]:
    """(requests succeeded, req/s, mean latency in µs) from h2load's report, checked: no
    request failed, and the DATA received is one framed reply of `reply_bytes` per request
    (a gRPC error is a 200 with no message, so the count of bytes tells them apart)."""
    finished, requests = _H2_FINISHED.search(text), _H2_REQUESTS.search(text)
    data, latency = _H2_DATA.search(text), _H2_LATENCY.search(text)
    if not (finished and requests and data and latency):
        raise BenchError("h2load printed no report: " + " | ".join(text.strip().splitlines()[-4:]))
    succeeded, failed, errored = int(requests[4]), int(requests[5]), int(requests[6])
    if failed or errored or not succeeded:
        raise BenchError(f"h2load: {succeeded} succeeded, {failed} failed, {errored} errored")
    expected = succeeded * (5 + reply_bytes)
    if int(data[1]) != expected:
        raise BenchError(f"h2load received {data[1]} bytes of DATA, not {expected} "
                         f"({succeeded} replies of {reply_bytes} bytes): some calls failed")
    mean_us = float(latency[5]) * _UNIT_US[latency[6]]
    return succeeded, float(finished[3]), mean_us


def h2load_measure(h2load: str, pin: list[str], body: Path, headers: dict[str, str],
                   reply_bytes: int, connections: int, streams: int,
                   warmup: float) -> Callable[[Server, float], Run]:
    def h2load_run(server: Server, seconds: float) -> str:
        command = [*pin, h2load, "-c", str(connections), "-m", str(streams), "-t", "1",
                   "-D", f"{seconds:g}", "-d", str(body),
                   "-H", "content-type: application/grpc", "-H", "te: trailers",
                   *(arg for name, value in headers.items() for arg in ("-H", f"{name}: {value}")),
                   f"http://127.0.0.1:{server.port}{GET_TASK}"]
        done = subprocess.run(command, capture_output=True, text=True, check=False,
                              timeout=seconds + 60)
        if done.returncode != 0:
            raise BenchError(f"h2load exited {done.returncode}: {done.stderr.strip()[-300:]}")
        return done.stdout

    def measure(server: Server, seconds: float) -> Run:
        # The warm-up is a run of its own: h2load's --warm-up-time counts its bytes received.
        if warmup:
            parse_h2load(h2load_run(server, warmup), reply_bytes)
        before = sum(cpu_seconds(pid) for pid in server.pids)
        text = h2load_run(server, seconds)
        used = sum(cpu_seconds(pid) for pid in server.pids) - before
        succeeded, rps, mean_us = parse_h2load(text, reply_bytes)
        return Run(rps, mean_us, used / succeeded * 1e6)

    return measure


# -- HTTP load: wrk -------------------------------------------------------------------------


def wrk_measure(wrk: str, pin: list[str], workdir: Path, load: Load, url: str,
                connections: int, warmup: float) -> Callable[[Server, float], Run]:
    script = workdir / f"{secrets.token_hex(4)}.lua"
    script.write_text(lua_script(load, secrets.token_hex(4)))

    def measure(server: Server, seconds: float) -> Run:
        if warmup:
            run_wrk(wrk, pin, url, script, threads=1, connections=connections, seconds=warmup)
        before = sum(cpu_seconds(pid) for pid in server.pids)
        result = run_wrk(wrk, pin, url, script, threads=1, connections=connections,
                         seconds=seconds)
        used = sum(cpu_seconds(pid) for pid in server.pids) - before
        if any(result.errors.values()):
            raise BenchError(f"wrk: errors {result.errors}")
        return Run(result.rps, result.latency_us["mean"], used / result.requests * 1e6)

    return measure


# -- setting up: the task, the servers, the probes ------------------------------------------


def _node_task(node: Server, grpc_port: int) -> bytes:
    """A completed task of the echo agent, created over JSON-RPC, as gRPC answers it."""
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
               "parts": [{"text": "bindings bench"}], "metadata": {"agentId": "echo"}}
    answer = httpx.post(node.rpc_url, headers={**node.headers, **V1}, timeout=30, json={
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}})
    task_id = answer.json()["result"]["task"]["id"]
    return asyncio.run(_grpc_get(grpc_port, task_id, _metadata(node.headers)))


def _metadata(headers: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple((name.lower(), value) for name, value in headers.items())


async def _grpc_get(port: int, task_id: str, metadata: tuple[tuple[str, str], ...]) -> bytes:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        call: grpc.aio.UnaryUnaryMultiCallable[pb.GetTaskRequest, bytes] = channel.unary_unary(
            GET_TASK, request_serializer=pb.GetTaskRequest.SerializeToString,
            response_deserializer=None)
        reply = await call(pb.GetTaskRequest(id=task_id), metadata=metadata, timeout=30)
    return reply


def _probe_http(method: str, url: str, headers: dict[str, str], body: bytes | None,
                task_id: str) -> None:
    answer = httpx.request(method, url, headers=headers, content=body, timeout=30)
    document = answer.json()
    task = document.get("result", document)
    if answer.status_code != 200 or task.get("id") != task_id:
        raise BenchError(f"{method} {url} answered {answer.status_code}: {answer.text[:200]}")


def start_servers(workdir: Path, pinning: Pinning) -> tuple[Server, int, list[Server]]:
    """The node (with its gRPC port), then the SDK's and the floor's gRPC servers holding
    the node's task: (node, its gRPC port, the others)."""
    grpc_port = _free_port()
    node = NodeLauncher("node", config=NODE_CONFIG.format(port=grpc_port)).start(
        workdir, pinning.server)
    others: list[Server] = []
    try:
        httpx.get(f"http://127.0.0.1:{node.port}/healthz", timeout=10)
        task_file = workdir / "task.bin"
        task_file.write_bytes(_node_task(node, grpc_port))
        if not SDK1_PYTHON.exists():
            raise BenchError(f"{SDK1_PYTHON.relative_to(ROOT)} is missing: "
                             f"run `make {SDK1_SETUP}`")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        others.append(launch("a2a-sdk 1.3.0", "sdk", [
            *pinning.server, str(SDK1_PYTHON), str(ROOT / "bench" / "sdk1_grpc_app.py"),
            str(task_file)], env, workdir / "sdk1.log", STARTED))
        for name, extra in (("floor", []), ("floor uvloop", ["--uvloop"])):
            others.append(launch(name, "floor", [
                *pinning.server, sys.executable, "-m", "bench.grpc_floor_app", str(task_file),
                *extra], dict(os.environ), workdir / f"{name.replace(' ', '-')}.log", STARTED))
    except BaseException:
        for server in (*others, node):
            server.stop()
        raise
    return node, grpc_port, others


def build_targets(args: argparse.Namespace, workdir: Path, pinning: Pinning, node: Server,
                  grpc_port: int, others: list[Server]) -> list[Target]:
    wrk = find_wrk()[0]
    h2load = find_h2load()
    task_bytes = (workdir / "task.bin").read_bytes()
    task_id = pb.Task.FromString(task_bytes).id
    body = workdir / "get_task.bin"
    body.write_bytes(grpc_frame(pb.GetTaskRequest(id=task_id).SerializeToString()))
    sdk1, floor, floor_uvloop = others
    node_grpc = Server(node.name, node.kind, node.proc, grpc_port, node.log)
    for server, headers in ((node_grpc, node.headers), (sdk1, {}), (floor, {}),
                            (floor_uvloop, {})):
        reply = asyncio.run(_grpc_get(server.port, task_id, _metadata(headers)))
        if reply != task_bytes:
            raise BenchError(f"{server.name}: its GetTask reply is not the node's task")

    def grpc_load(headers: dict[str, str]) -> Callable[[Server, float], Run]:
        return h2load_measure(h2load, pinning.load, body, headers, len(task_bytes),
                              args.connections, args.streams, args.warmup)

    http_headers = {**node.headers, **V1}
    rpc = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                      "params": {"id": task_id}}, separators=(",", ":")).encode()
    rest_path = f"{REST_PREFIX}tasks/{task_id}"
    base = f"http://127.0.0.1:{node.port}"
    _probe_http("POST", base + RPC_PATH, {**http_headers, "Content-Type": "application/json"},
                rpc, task_id)
    _probe_http("GET", base + rest_path, http_headers, None, task_id)
    http_connections = args.connections * args.streams  # as many requests in flight
    return [
        Target("grpc node", node_grpc, grpc_load(node.headers)),
        Target("grpc a2a-sdk 1.3.0", sdk1, grpc_load({})),
        Target("grpc floor", floor, grpc_load({})),
        Target("grpc floor uvloop", floor_uvloop, grpc_load({})),
        Target("json-rpc node", node, wrk_measure(
            wrk, pinning.load, workdir, Load(http_headers, body=rpc), base + RPC_PATH,
            http_connections, args.warmup)),
        Target("rest node", node, wrk_measure(
            wrk, pinning.load, workdir, Load(http_headers, method="GET", path=rest_path),
            base + rest_path, http_connections, args.warmup)),
    ]


# -- the rounds and the report --------------------------------------------------------------


def run_rounds(targets: list[Target], rounds: int, seconds: float) -> None:
    for index in range(rounds):
        shift = index % len(targets)
        order = targets[shift:] + targets[:shift]  # each round starts with another target
        if index % 2:
            order.reverse()
        print(f"round {index + 1}/{rounds}:", end="", flush=True)
        for target in order:
            if not target.server.alive():
                raise BenchError(f"{target.name}: its server exited")
            run = target.measure(target.server, seconds)
            target.runs.append(run)
            print(f" {target.name} {run.rps:.0f}/s;", end="", flush=True)
        print(flush=True)


def _spread(values: list[float]) -> str:
    return f"{min(values):.0f}-{max(values):.0f}" if values else "-"


def report(targets: list[Target]) -> list[str]:
    """The table and the ratio lines (printed, and returned for the caller)."""
    by_name = {target.name: target for target in targets}
    lines = [f"{'target':<22}{'req/s median':>14}{'min-max':>14}{'mean latency µs':>17}"
             f"{'server CPU µs/req':>19}"]
    for target in targets:
        rps = [run.rps for run in target.runs]
        lines.append(
            f"{target.name:<22}{statistics.median(rps):>14.0f}{_spread(rps):>14}"
            f"{statistics.median(run.latency_mean_us for run in target.runs):>17.0f}"
            f"{statistics.median(run.cpu_per_request_us for run in target.runs):>19.0f}")
    for label, top, bottom, goal in (
        ("grpc node / grpc a2a-sdk 1.3.0", "grpc node", "grpc a2a-sdk 1.3.0", GOAL_GRPC),
        ("grpc floor / grpc a2a-sdk 1.3.0", "grpc floor", "grpc a2a-sdk 1.3.0", None),
        ("grpc floor uvloop / grpc a2a-sdk 1.3.0", "grpc floor uvloop", "grpc a2a-sdk 1.3.0",
         None),
        ("grpc node / grpc floor uvloop", "grpc node", "grpc floor uvloop", None),
        ("rest node / json-rpc node", "rest node", "json-rpc node", GOAL_REST),
    ):
        ratios = [a.rps / b.rps for a, b in zip(by_name[top].runs, by_name[bottom].runs,
                                                strict=True)]
        verdict = ""
        if goal is not None:
            passed = statistics.median(ratios) >= goal
            verdict = f"  goal >= {goal:g}: {'PASS' if passed else 'FAIL'}"
        lines.append(f"{label}: median {statistics.median(ratios):.2f} (rounds "
                     f"{min(ratios):.2f}-{max(ratios):.2f}){verdict}")
    return lines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.bindings", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_load_options(parser, duration=8, warmup=2, quick=(2, 2, 1), seconds=float,
                     quick_help="smoke run: 2 rounds of 2 s")
    parser.add_argument("--connections", type=int, default=8, metavar="N",
                        help="gRPC connections (h2load -c; default 8)")
    parser.add_argument("--streams", type=int, default=4, metavar="M",
                        help="concurrent streams per gRPC connection (h2load -m; default 4); "
                        "wrk opens N x M connections, as many requests in flight")
    return finish_load_options(parser, parser.parse_args(argv))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    pinning = plan_pinning()
    print(f"bindings bench: {cpu_model()}, {os.cpu_count()} CPUs; {pinning.note}")
    print(f"load: gRPC h2load -c {args.connections} -m {args.streams}; HTTP wrk -c "
          f"{args.connections * args.streams}; {args.rounds} rounds of {args.duration:g} s "
          f"(+{args.warmup:g} s warm-up) per target", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-bindings-") as tmp:
        workdir = Path(tmp)
        node, grpc_port, others = start_servers(workdir, pinning)
        try:
            targets = build_targets(args, workdir, pinning, node, grpc_port, others)
            run_rounds(targets, args.rounds, args.duration)
        finally:
            for server in (*others, node):
                server.stop()
    print()
    for line in report(targets):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
