"""The official `a2a-sdk` 1.x server as a peer: `tests/interop/sdk1_driver.py` run with the
SDK's own virtualenv (`make sdk1-venv`), serving one binding until its stdin closes."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SDK1_PYTHON = ROOT / ".venv-sdk1" / "bin" / "python"
DRIVER = ROOT / "tests" / "interop" / "sdk1_driver.py"
# The driver's server command for each binding it serves alone.
COMMANDS = {"JSONRPC": "server", "HTTP+JSON": "server-rest", "GRPC": "server-grpc"}

needs_sdk1 = pytest.mark.skipif(
    not SDK1_PYTHON.exists(),
    reason="the a2a-sdk 1.x venv is missing: run `make sdk1-venv` (make test builds it)",
)


@dataclass(frozen=True)
class Sdk1Server:
    url: str  # where its card is served (the peer's catalog endpoint)
    binding: str
    grpc_port: int | None = None  # GRPC: the port of its A2AService


@contextmanager
def sdk1_server(peer: str, key: str, binding: str = "JSONRPC") -> Iterator[Sdk1Server]:
    """The SDK's server admitting `peer` by `key` (X-API-Key), serving `binding` only."""
    process = subprocess.Popen(
        [str(SDK1_PYTHON), str(DRIVER), COMMANDS[binding], peer, key],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("PORT "), line
        words = line.split()
        grpc_port = int(words[3]) if len(words) == 4 and words[2] == "GRPC" else None
        yield Sdk1Server(f"http://127.0.0.1:{int(words[1])}", binding, grpc_port)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
