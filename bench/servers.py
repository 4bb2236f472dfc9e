"""Launchers: start one server as a separate process on a free loopback port, and stop it.

Each server writes its stderr to a log file in the bench's temporary directory (read for the
start-up event that carries the port, and shown when something fails), so no pipe has to be
drained while wrk runs. A launcher is reusable: `start` may be called once per bench run.

To add a server row, make another `NodeLauncher` with its own name, extra arguments and
environment, and give it scenarios in `bench.scenarios`. `PgNodeLauncher` runs the node on a
throwaway PostgreSQL database the bench creates and drops: one replica, or several node
processes on several ports sharing the database (one server of several processes: its CPU is
theirs added up, and wrk's threads spread over their ports).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import asyncpg
from cryptography.fernet import Fernet

from bench.serve import RPC_PATH, STARTED

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0
NODE_STARTED = "a2a.node.started"
# The official a2a-sdk 1.x (`make sdk1-venv`): it shares the `a2a` import name with the 0.3
# SDK of this virtualenv, so its servers run in a virtualenv of their own.
SDK1_PYTHON = ROOT / ".venv-sdk1" / "bin" / "python"
SDK1_SETUP = "sdk1-venv"

Kind = Literal["floor", "sdk", "node"]


class ServerError(RuntimeError):
    pass


@dataclass
class Server:
    """A running server: its process, port and the headers a load must send to it."""

    name: str
    kind: Kind
    proc: subprocess.Popen[bytes]
    port: int
    log: Path
    headers: dict[str, str] = field(default_factory=dict)
    replicas: list[Server] = field(default_factory=list)  # the other processes of this server
    cleanup: Callable[[], None] | None = None  # after every process stopped
    hostile: bool = True  # run the hostile-body checks against it

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def pids(self) -> list[int]:
        return [self.proc.pid, *(r.proc.pid for r in self.replicas)]

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.port, *(r.port for r in self.replicas))

    def alive(self) -> bool:
        return all(p.poll() is None for p in (self.proc, *(r.proc for r in self.replicas)))

    @property
    def rpc_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{RPC_PATH}"

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def count_events(self, event: str) -> int:
        """How many times the server (every process of it) has logged `event` so far."""
        marker = f'"{event}"'.encode()
        found = 0
        for log in (self.log, *(r.log for r in self.replicas)):
            try:
                found += log.read_bytes().count(marker)
            except OSError:
                continue
        return found

    def stop(self) -> None:
        try:
            for proc in (self.proc, *(r.proc for r in self.replicas)):
                stop_process(proc)
        finally:
            if self.cleanup is not None:
                self.cleanup()


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not exited within STOP_TIMEOUT."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def launch(name: str, kind: Kind, command: list[str], env: dict[str, str], log: Path,
           event: str) -> Server:
    """Start `command`, wait for the JSON `event` line with the port in its stderr log."""
    with log.open("wb") as sink:
        proc = subprocess.Popen(command, env=env, cwd=ROOT, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=sink)
    server = Server(name, kind, proc, 0, log)
    try:
        server.port = _wait_for_port(proc, log, event)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_for_port(proc: subprocess.Popen[bytes], log: Path, event: str) -> int:
    deadline = time.monotonic() + START_TIMEOUT
    marker = f'"{event}"'
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if marker in line:
                try:
                    return int(json.loads(line)["port"])
                except (ValueError, KeyError, TypeError):
                    continue
        if proc.poll() is not None:
            raise ServerError(f"exited with status {proc.returncode} before listening")
        time.sleep(0.05)
    raise ServerError(f"did not report {event} within {START_TIMEOUT:.0f} s")


@dataclass(frozen=True)
class ModuleLauncher:
    """A baseline server module of this package (`python -m bench.floor_app`, …), run by
    this virtualenv's python or by `python`, another's (`SDK1_PYTHON`), which `make <setup>`
    builds."""

    name: str
    kind: Kind
    module: str
    python: Path | None = None
    setup: str = ""

    def start(self, workdir: Path, pin: list[str]) -> Server:
        python, env = sys.executable, dict(os.environ)
        if self.python is not None:
            if not self.python.exists():
                raise ServerError(f"{self.python.relative_to(ROOT)} is missing: run "
                                  f"`make {self.setup}`")
            python = str(self.python)
            env.pop("PYTHONPATH", None)  # this virtualenv's packages are not the other's
        command = [*pin, python, "-m", self.module]
        server = launch(self.name, self.kind, command, env, workdir / f"{self.name}.log",
                        STARTED)
        # Ignored by these servers; sent so every request has the node's size and shape.
        server.headers = {"X-A2A-Peer-Name": "bench-peer", "X-API-Key": secrets.token_urlsafe(32)}
        return server


@dataclass(frozen=True)
class NodeLauncher:
    """This node, `python -m synthorg.api`, driven only through its process and CLI.

    A fresh data dir with a config enabling the gateway for one peer, registered with
    `synthorg-a2a peers add` (secret on stdin). `args` are appended to the command line and
    `env` to the environment, for variants of the node.
    """

    name: str
    peer: str = "bench-peer"
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    kind: Kind = "node"
    config: str = ""  # more config.yaml, after the a2a key
    traced: bool = False  # export traces to the bench's local OTLP sink

    def start(self, workdir: Path, pin: list[str]) -> Server:
        env = dict(self.env)
        if self.traced:
            from bench.otlp_sink import sink_url

            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = sink_url()
        server = start_node(self.name, self.kind, self.peer, self.args, env, workdir, pin,
                            config=self.config)
        server.hostile = not (self.config or self.traced)  # the plain node's rows check them
        return server


def start_node(name: str, kind: Kind, peer: str, args: tuple[str, ...], extra: dict[str, str],
               workdir: Path, pin: list[str], replicas: int = 1, config: str = "") -> Server:
    """`replicas` node processes sharing one store, each with a data dir of its own (the
    same config), one peer registered through the CLI; the first is the server, the others
    its `replicas`."""
    base = {**os.environ, **extra}
    secret = secrets.token_urlsafe(32)
    servers: list[Server] = []
    try:
        for index in range(replicas):
            label = name if replicas == 1 else f"{name}-{index + 1}"
            data_dir = workdir / label
            data_dir.mkdir(mode=0o700)
            (data_dir / "config.yaml").write_text(
                f"a2a:\n  enabled: true\n  allowed_peers: [{peer}]\n{config}"
            )
            env = {**base, "SYNTHORG_DATA_DIR": str(data_dir)}
            if index == 0:  # one catalog record serves every replica of a shared store
                added = subprocess.run(
                    [sys.executable, "-m", "synthorg.cli.main", "peers", "add", peer,
                     "--endpoint", "http://127.0.0.1:9"],
                    input=secret.encode(), env=env, cwd=ROOT, capture_output=True, timeout=60,
                )
                if added.returncode != 0:
                    raise ServerError("peers add failed: "
                                      + added.stderr.decode(errors="replace"))
            env |= {"SYNTHORG_BACKEND_HOST": "127.0.0.1", "SYNTHORG_BACKEND_PORT": "0"}
            command = [*pin, sys.executable, "-m", "synthorg.api", *args]
            servers.append(launch(label, kind, command, env, workdir / f"{label}.log",
                                  NODE_STARTED))
    except BaseException:
        for started in servers:
            started.stop()
        raise
    server = servers[0]
    server.name, server.replicas = name, servers[1:]
    server.headers = {"X-A2A-Peer-Name": peer, "X-API-Key": secret}
    return server


BENCH_POSTGRES_ENV = "SYNTHORG_BENCH_POSTGRES_URL"
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


def _postgres(sql: str) -> None:
    async def run() -> None:
        conn = await asyncpg.connect(os.environ.get(BENCH_POSTGRES_ENV) or DEFAULT_POSTGRES,
                                     timeout=10)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run())


@dataclass(frozen=True)
class PgNodeLauncher:
    """This node on PostgreSQL: a throwaway database created for the run and dropped after
    (`$SYNTHORG_BENCH_POSTGRES_URL`, default the local server), `replicas` node processes on
    as many ports sharing it, with one shared key."""

    name: str
    replicas: int = 1
    peer: str = "bench-peer"
    kind: Kind = "node"

    def start(self, workdir: Path, pin: list[str]) -> Server:
        database = f"synthorg_bench_{secrets.token_hex(4)}"
        try:
            _postgres(f'CREATE DATABASE "{database}"')
        except Exception as exc:
            raise ServerError(f"cannot create a database on PostgreSQL ({type(exc).__name__}); "
                              f"set {BENCH_POSTGRES_ENV} to a server the bench may use") from None
        server_url = os.environ.get(BENCH_POSTGRES_ENV) or DEFAULT_POSTGRES
        env = {
            "SYNTHORG_DATABASE_URL": urlsplit(server_url)._replace(path=f"/{database}").geturl(),
            "SYNTHORG_SECRET_KEY": Fernet.generate_key().decode(),
        }

        def drop() -> None:
            _postgres(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')

        try:
            server = start_node(self.name, self.kind, self.peer, (), env, workdir, pin,
                                self.replicas)
        except BaseException:
            drop()
            raise
        server.cleanup, server.hostile = drop, False
        return server


Launcher = ModuleLauncher | NodeLauncher | PgNodeLauncher
