"""Launchers: start one server as a separate process on a free loopback port, and stop it.

Each server writes its stderr to a log file in the bench's temporary directory (read for the
start-up event that carries the port, and shown when something fails), so no pipe has to be
drained while wrk runs. A launcher is reusable: `start` may be called once per bench run.

To add a server row later (say a node with more workers, or one on PostgreSQL), make another
`NodeLauncher` with its own name, extra arguments and environment, and give it scenarios in
`bench.scenarios`.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from bench.serve import RPC_PATH, STARTED

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0
NODE_STARTED = "a2a.node.started"

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

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def rpc_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{RPC_PATH}"

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def count_events(self, event: str) -> int:
        """How many times the server has logged `event` so far."""
        marker = f'"{event}"'.encode()
        try:
            return self.log.read_bytes().count(marker)
        except OSError:
            return 0

    def stop(self) -> None:
        stop_process(self.proc)


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
    """A baseline server module of this package (`python -m bench.floor_app`, …)."""

    name: str
    kind: Kind
    module: str

    def start(self, workdir: Path, pin: list[str]) -> Server:
        command = [*pin, sys.executable, "-m", self.module]
        server = launch(self.name, self.kind, command, dict(os.environ),
                        workdir / f"{self.name}.log", STARTED)
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

    def start(self, workdir: Path, pin: list[str]) -> Server:
        data_dir = workdir / self.name
        data_dir.mkdir(mode=0o700)
        (data_dir / "config.yaml").write_text(
            f"a2a:\n  enabled: true\n  allowed_peers: [{self.peer}]\n"
        )
        env = {**os.environ, "SYNTHORG_DATA_DIR": str(data_dir), **dict(self.env)}
        secret = secrets.token_urlsafe(32)
        added = subprocess.run(
            [sys.executable, "-m", "synthorg.cli.main", "peers", "add", self.peer,
             "--endpoint", "http://127.0.0.1:9"],
            input=secret.encode(), env=env, cwd=ROOT, capture_output=True, timeout=60,
        )
        if added.returncode != 0:
            raise ServerError("peers add failed: " + added.stderr.decode(errors="replace"))
        env |= {"SYNTHORG_BACKEND_HOST": "127.0.0.1", "SYNTHORG_BACKEND_PORT": "0"}
        command = [*pin, sys.executable, "-m", "synthorg.api", *self.args]
        server = launch(self.name, self.kind, command, env, workdir / f"{self.name}.log",
                        NODE_STARTED)
        server.headers = {"X-A2A-Peer-Name": self.peer, "X-API-Key": secret}
        return server


Launcher = ModuleLauncher | NodeLauncher
