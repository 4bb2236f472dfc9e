"""Real nodes as separate processes on ephemeral loopback ports, for live tests.

A node is started with `SYNTHORG_BACKEND_PORT=0`; it binds, listens, then writes its
`a2a.node.started` event with the real port, which is what we wait for (no sleeps).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30.0


def cli(data_dir: Path, *args: str, stdin: str | None = None, check: bool = True,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the `synthorg-a2a` CLI against a data dir, as an operator would."""
    full_env = {**os.environ, "SYNTHORG_DATA_DIR": str(data_dir), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "synthorg.cli.main", *args],
        input=stdin, capture_output=True, text=True, env=full_env, cwd=ROOT, check=check,
        timeout=60,
    )


class NodeProcess:
    # The event whose `port` says the node is up: a node on a database that is not reachable
    # yet listens (`a2a.node.listening`) before it serves (`a2a.node.started`).
    start_event = "a2a.node.started"

    def __init__(self, data_dir: Path, config_yaml: str | None = None,
                 env: dict[str, str] | None = None, argv: list[str] | None = None,
                 cwd: Path = ROOT) -> None:
        self.data_dir = data_dir
        self.env = env or {}
        self.argv = argv or [sys.executable, "-m", "synthorg.api"]  # the command that serves
        self.cwd = cwd
        data_dir.mkdir(parents=True, exist_ok=True)
        if config_yaml is not None:
            (data_dir / "config.yaml").write_text(config_yaml)
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.lines: list[str] = []
        self._started = threading.Event()
        self._reader: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def rpc_url(self) -> str:
        return f"{self.url}/api/v1/a2a/"

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        found = []
        for line in list(self.lines):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and (name is None or event.get("event") == name):
                found.append(event)
        return found

    def start(self) -> NodeProcess:
        env = {
            **os.environ,
            "SYNTHORG_DATA_DIR": str(self.data_dir),
            "SYNTHORG_BACKEND_HOST": "127.0.0.1",
            "SYNTHORG_BACKEND_PORT": "0",
            **self.env,
        }
        self.lines = []
        self._started.clear()
        self.proc = subprocess.Popen(
            self.argv, env=env, cwd=self.cwd,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True,  # its own process group: kill() reaches every worker
        )
        self._reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self._reader.start()
        if not self._started.wait(START_TIMEOUT) or not self.port:
            self.stop()
            raise RuntimeError("node did not start:\n" + "\n".join(self.lines[-20:]))
        return self

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.lines.append(line.rstrip("\n"))
            if not self._started.is_set() and f'"{self.start_event}"' in line:
                self.port = int(json.loads(line)["port"])
                self._started.set()
        self._started.set()  # the process ended: unblock start()

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=5)
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL to the node and its workers: no shutdown, no flush; what survives is what
        was acknowledged."""
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=5)

    def client(self, peer: str | None = None, key: str | None = None) -> httpx.Client:
        headers = {}
        if peer is not None:
            headers["X-A2A-Peer-Name"] = peer
        if key is not None:
            headers["X-API-Key"] = key
        return httpx.Client(base_url=self.url, headers=headers, timeout=30.0)

    def __enter__(self) -> NodeProcess:
        if self.proc is not None and self.proc.poll() is None:
            return self  # already started: `with NodeProcess(...).start() as node`
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
