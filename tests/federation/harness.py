"""Live federation: real nodes as separate processes, configured only as an operator would.

Each `FedNode` is a real `python -m synthorg.api` process on a loopback port with its own
data dir. Its config.yaml (node name, allowlist, agents) is written before start; everything
else goes through the `synthorg-a2a` CLI: links between nodes (`peers add` on both sides with
one shared link secret), delegations, follows, cancels, listings.

Each node's stderr events can be awaited (`wait_for_event`, no sleeps). A node can be
SIGKILLed and restarted on the same data dir and the same port (`SYNTHORG_BACKEND_PORT` set
explicitly), so its peers' catalog records stay valid.
"""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.integration.live import LiveNode
from tests.support.node import cli

CLIENT_TIMEOUT = 10.0
# An agent of examples/slow_writer.py: progress messages and `chunks` artifact chunks over
# `seconds`.
WRITER = (
    "  - id: {id}\n    name: {id}\n    executor:\n      kind: python\n"
    "      entrypoint: examples.slow_writer:factory\n"
    "      options: {{seconds: {seconds}, chunks: {chunks}}}\n"
)
# node-b's agents in a linked pair: writer (about a second), patient (the same, 6 s),
# slowpoke (a minute), echo.
B_AGENTS = (
    "agents:\n"
    + WRITER.format(id="writer", seconds=0.9, chunks=3)
    + WRITER.format(id="patient", seconds=6, chunks=3)
    + WRITER.format(id="slowpoke", seconds=60, chunks=60)
    + "  - {id: echo, name: echo, executor: {kind: echo}}\n"
)


def agents_yaml(agents: dict[str, str]) -> str:
    """`{id: executor}` -> the agents list; an executor is `echo`, `park` or `PEER/AGENT`."""
    lines = ["agents:"]
    for agent_id, executor in agents.items():
        if "/" in executor:
            peer, agent = executor.split("/", 1)
            kind = f"{{kind: peer, peer: {peer}, agent: {agent}}}"
        else:
            kind = f"{{kind: {executor}}}"
        lines.append(f"  - {{id: {agent_id}, name: {agent_id}, executor: {kind}}}")
    return "\n".join(lines) + "\n"


def node_config(
    name: str, allowed: list[str], agents: dict[str, str] | str, public_url: str | None = None,
    grpc_port: int | None = None,
) -> str:
    """`agents` as for agents_yaml, or the agents list already written as YAML; `grpc_port`:
    the node serves gRPC there too."""
    return (
        "a2a:\n"
        "  enabled: true\n"
        f"  node_name: {name}\n"
        f"  allowed_peers: [{', '.join(allowed)}]\n"
        f"  client_timeout_seconds: {CLIENT_TIMEOUT}\n"
        + (f"  public_url: {public_url}\n" if public_url else "")
        + (f"server:\n  grpc_port: {grpc_port}\n" if grpc_port else "")
        + (agents if isinstance(agents, str) else agents_yaml(agents))
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FedNode(LiveNode):
    def __init__(self, root: Path, name: str, allowed: list[str], agents: dict[str, str] | str,
                 *, public: bool = False, grpc: bool = False):
        """`public`: the node listens on a port fixed now and names it as its public_url
        (its peers push to it there); `grpc`: it serves gRPC too, on a port of its own."""
        port = free_port() if public else 0
        public_url = f"http://127.0.0.1:{port}" if public else None
        self.grpc_port = free_port() if grpc else None
        super().__init__(root / name, node_config(name, allowed, agents, public_url,
                                                  self.grpc_port),
                         env={"SYNTHORG_BACKEND_PORT": str(port)} if public else None)
        self.name = name

    def cli(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """`synthorg-a2a ARGS` on this node's data dir (never raises on a non-zero exit)."""
        return cli(self.data_dir, *args, stdin=stdin if stdin is not None else "", check=False)

    def cli_json(self, *args: str) -> Any:
        result = self.cli(*args, "--json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def add_peer(self, peer: str, endpoint: str, secret: str) -> None:
        result = self.cli("peers", "add", peer, "--endpoint", endpoint, stdin=secret)
        assert result.returncode == 0, result.stderr

    def restart(self) -> FedNode:
        """Start again on the same data dir and, when it had one, the same port."""
        if self.port:
            self.env["SYNTHORG_BACKEND_PORT"] = str(self.port)
        self.start()
        return self


@contextmanager
def running(*nodes: FedNode) -> Iterator[tuple[FedNode, ...]]:
    """Start the nodes side by side (each start waits for its own started event), and
    stop every one that started, whatever happens."""
    with ThreadPoolExecutor(len(nodes)) as pool:
        starts = [pool.submit(node.start) for node in nodes]
    try:
        for start in starts:
            start.result()  # re-raises a node's start failure
        yield nodes
    finally:
        for node in nodes:
            node.stop()


def link(x: FedNode, y: FedNode) -> str:
    """Register x and y with each other, both records holding one new link secret."""
    secret = secrets.token_urlsafe(24)
    x.add_peer(y.name, y.url, secret)
    y.add_peer(x.name, x.url, secret)
    return secret


def delegate(node: FedNode, peer: str, text: str, *extra: str) -> tuple[int, dict[str, Any]]:
    """`delegate PEER TEXT EXTRA --json`: (exit code, the outbound record)."""
    result = node.cli("delegate", peer, text, *extra, "--json")
    assert result.stdout, f"no record printed (exit {result.returncode}): {result.stderr}"
    record: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, record


def artifact_texts(task: dict[str, Any]) -> list[str]:
    return [
        part["text"]
        for artifact in task.get("artifacts") or []
        for part in artifact["parts"]
        if part["kind"] == "text"
    ]


def status_text(task: dict[str, Any]) -> str:
    message = task["status"].get("message") or {}
    return "\n".join(p["text"] for p in message.get("parts", []) if p["kind"] == "text")


@dataclass
class Pair:
    a: FedNode
    b: FedNode
    secret: str  # their link secret

    def __iter__(self) -> Iterator[FedNode]:
        """`a, b = pair`."""
        return iter((self.a, self.b))


def call_in(a: FedNode, b: FedNode, binding: str, secret: str) -> None:
    """node-a's record of node-b (the same secret) set to call it in `binding`."""
    chosen = a.cli("peers", "add", b.name, "--endpoint", b.url, "--binding", binding,
                   stdin=secret)
    assert chosen.returncode == 0, chosen.stderr


@contextmanager
def linked_pair(
    root: Path, binding: str | None = None, *, agents: str = B_AGENTS, public: bool = False,
    grpc: bool = False, node: Callable[..., FedNode] = FedNode,
) -> Iterator[Pair]:
    """node-a (agent echo; `public`: it has a public_url, its peers push to it) and node-b
    (`agents`; `grpc`: it serves gRPC too), made by `node`, started side by side and linked;
    with `binding`, node-a's record of node-b calls it in that binding.

        node-a  allows node-b   (the operator's node: the CLI runs on its data dir)
        node-b  allows node-a
    """
    a = node(root, "node-a", ["node-b"], {"echo": "echo"}, public=public)
    b = node(root, "node-b", ["node-a"], agents, grpc=grpc)
    with running(a, b):
        secret = link(a, b)
        if binding is not None:
            call_in(a, b, binding, secret)
        yield Pair(a, b, secret)
