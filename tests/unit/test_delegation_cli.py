"""`synthorg-a2a delegate` and `tasks`: the real CLI in a subprocess, against a scripted peer.

The live two- and three-node behaviour is in tests/federation; here are the error paths, the
exit codes and the rendering, which need no second node.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from synthorg.dialects.objects import task_v1
from synthorg.generated.models import Task
from synthorg.store.sqlite.database import open_database
from synthorg.store.sqlite.tasks import SqliteTaskStore
from synthorg.store.tasks import MessageKey
from tests.support.catalog import add_peer
from tests.support.node import cli
from tests.support.scripted_server import Answer, ScriptedServer

SECRET = "cli-delegation-secret-must-never-print-93ad"
CONFIG = "a2a:\n  enabled: true\n  node_name: node-a\n  allowed_peers: [node-b]\n"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "node-a"
    directory.mkdir()
    (directory / "config.yaml").write_text(CONFIG)
    return directory


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:  # one per module: its shutdown takes a poll interval
        yield server


@pytest.fixture
def peer(data_dir: Path, scripted: ScriptedServer) -> ScriptedServer:
    scripted.script.clear()
    scripted.received.clear()
    add_peer(data_dir, "node-b", SECRET, endpoint=scripted.url)
    return scripted


def run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = cli(data_dir, *args, check=False)
    assert SECRET not in result.stdout + result.stderr
    return result


def task(state: str, **extra: Any) -> Answer:
    body = {"kind": "task", "id": "remote-1", "contextId": "ctx-1", "status": {"state": state}}
    return Answer(body={"jsonrpc": "2.0", "result": {**body, **extra}}, echo_id=True)


def one_error_line(result: subprocess.CompletedProcess[str], code: int, start: str) -> None:
    assert result.returncode == code, result.stderr
    assert result.stderr.startswith(f"error: {start}"), result.stderr
    assert result.stderr.count("\n") == 1


def test_delegate_needs_the_node_name(data_dir: Path, peer: ScriptedServer) -> None:
    (data_dir / "config.yaml").write_text("a2a:\n  enabled: true\n")
    result = run(data_dir, "delegate", "node-b", "hi")
    one_error_line(result, 2, f"{data_dir / 'config.yaml'}: a2a.node_name is not set")
    assert peer.received == []


def test_delegate_to_an_unknown_peer(data_dir: Path) -> None:
    one_error_line(run(data_dir, "delegate", "node-z", "hi"), 1, "no peer named node-z")


def test_delegate_refused_by_the_peer(data_dir: Path, peer: ScriptedServer) -> None:
    error = {"code": -32004, "message": "Peer not allowed"}
    peer.script.append(Answer(403, {"jsonrpc": "2.0", "id": None, "error": error}))
    result = run(data_dir, "delegate", "node-b", "hi")
    one_error_line(result, 3, "peer node-b refused: -32004 Peer not allowed (HTTP 403)")
    assert json.loads(run(data_dir, "tasks", "list", "--json").stdout) == {
        "outbound": [], "inbound": [],
    }


def test_delegate_to_an_unreachable_peer(data_dir: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        add_peer(data_dir, "node-b", SECRET, endpoint=f"http://127.0.0.1:{sock.getsockname()[1]}")
        result = run(data_dir, "delegate", "node-b", "hi")
    one_error_line(result, 3, "peer node-b unavailable: gave up after")
    assert "cannot connect" in result.stderr


def test_delegate_sends_the_origin_hop_and_agent(data_dir: Path, peer: ScriptedServer) -> None:
    peer.script.append(task("completed"))
    result = run(data_dir, "delegate", "node-b", "hi", "--agent", "echo", "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["peer"] == "node-b" and record["state"] == "completed"
    message = json.loads(peer.received[0].body)["params"]["message"]
    assert message["parts"] == [{"kind": "text", "text": "hi"}]
    assert message["metadata"] == {"synthorg.visited": ["node-a"], "agentId": "echo"}
    assert peer.received[0].headers["X-A2A-Peer-Name"] == "node-a"


def test_delegate_wait_shows_progress_then_artifacts(data_dir: Path, peer: ScriptedServer) -> None:
    artifacts = [{
        "artifactId": "a-1",
        "name": "answer",
        "parts": [{"kind": "text", "text": "line one\nline two"},
                  {"kind": "data", "data": {"score": 3}}],
    }]
    peer.script.extend([task("submitted"), task("working"), task("completed", artifacts=artifacts)])
    result = run(data_dir, "delegate", "node-b", "hi", "--wait", "--timeout", "20")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "local id" in out and "remote task" in out and "remote-1" in out
    shown = [line.split("] ")[1] for line in out.splitlines() if line.startswith("  [")]
    # The states, and the artifact's parts as they arrived (with the last state here).
    assert shown == ["submitted", "working", "completed", "artifact answer: line one",
                     'artifact answer: {']
    assert 'artifact answer:\n  line one\n  line two\n  {\n    "score": 3\n  }' in out


def test_delegate_ending_failed_exits_4_with_the_reason(
    data_dir: Path, peer: ScriptedServer
) -> None:
    status = {"state": "failed", "message": {
        "kind": "message", "messageId": "m-1", "role": "agent",
        "parts": [{"kind": "text", "text": "peer node-c refused: Delegation loop"}],
    }}
    peer.script.append(Answer(body={"jsonrpc": "2.0", "result": {
        "kind": "task", "id": "remote-1", "contextId": "ctx-1", "status": status,
    }}, echo_id=True))
    result = run(data_dir, "delegate", "node-b", "hi", "--wait")
    assert result.returncode == 4
    assert "failed" in result.stdout and "Delegation loop" in result.stdout


def test_wait_gives_up_at_the_timeout(data_dir: Path, peer: ScriptedServer) -> None:
    peer.script.extend(task("working") for _ in range(200))
    result = run(data_dir, "delegate", "node-b", "hi", "--wait", "--timeout", "0.3")
    one_error_line(result, 5, "stopped following: task ")
    assert "synthorg-a2a tasks follow" in result.stderr
    record = json.loads(run(data_dir, "tasks", "list", "--outbound", "--json").stdout)
    assert [r["state"] for r in record["outbound"]] == ["working"]


@pytest.mark.parametrize("args", [
    ("delegate", "node-b", "hi", "--timeout", "0"),
    ("delegate", "node-b", "hi", "--timeout", "soon"),
    ("tasks", "list", "--outbound", "--inbound"),
    ("tasks", "list", "--limit", "0"),
])
def test_usage_errors(data_dir: Path, args: tuple[str, ...]) -> None:
    assert run(data_dir, *args).returncode == 2


def test_unknown_task_ids(data_dir: Path) -> None:
    for command in ("get", "cancel", "follow"):
        result = run(data_dir, "tasks", command, "no-such-task")
        assert result.returncode == 1 and "no-such-task" in result.stderr, result.stderr


def test_an_inbound_final_task_cannot_be_canceled(data_dir: Path) -> None:
    final = {
        "kind": "task", "id": "in-1", "contextId": "ctx-1",
        "status": {"state": "completed"}, "history": [], "artifacts": [],
        "metadata": {"agentId": "echo"},
    }
    db = open_database(data_dir)
    try:
        task = task_v1(Task.model_validate(final))  # the store keeps 1.0 tasks
        asyncio.run(SqliteTaskStore(db).create("node-b", MessageKey("m-1", "digest"), task))
    finally:
        db.close()
    shown = json.loads(run(data_dir, "tasks", "get", "in-1", "--json").stdout)
    assert shown == {"peer": "node-b", "task": final}
    result = run(data_dir, "tasks", "cancel", "in-1")
    one_error_line(result, 4, "task in-1 cannot be canceled: it is already completed")


def test_help_documents_the_exit_codes(data_dir: Path) -> None:
    for args in (("delegate", "--help"), ("tasks", "--help"), ("tasks", "cancel", "--help")):
        out = run(data_dir, *args).stdout
        assert "exit codes:" in out and "-32003" in out and "-32004" in out


def test_peer_text_cannot_drive_the_terminal(data_dir: Path, peer: ScriptedServer) -> None:
    artifacts = [{"artifactId": "a-1", "parts": [{"kind": "text", "text": "\x1b[2Jgone\x07"}]}]
    peer.script.append(task("completed", artifacts=artifacts))
    result = run(data_dir, "delegate", "node-b", "hi")
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "\\x1b[2Jgone\\x07" in result.stdout


def test_an_ambiguous_task_id_prefix_names_the_candidates(data_dir: Path) -> None:
    from synthorg.generated.models import V1Task
    from synthorg.store.delegations import Delegation
    from synthorg.store.sqlite.delegations import SqliteDelegationStore

    db = open_database(data_dir)
    try:
        store = SqliteDelegationStore(db)
        for suffix in ("1111", "2222"):
            local_id = f"abcd{suffix}-0000-4000-8000-000000000000"
            asyncio.run(store.add(Delegation(
                local_id, "node-b", f"remote-{suffix}", "ctx", f"m-{suffix}",
                "TASK_STATE_WORKING", None,
                V1Task.model_validate({"id": f"remote-{suffix}", "contextId": "ctx",
                                       "status": {"state": "TASK_STATE_WORKING"}}),
                "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z")))
    finally:
        db.close()
    for command in ("get", "follow", "cancel"):
        result = run(data_dir, "tasks", command, "abcd")
        assert result.returncode == 2, result.stderr
        assert result.stderr == (
            "error: abcd is the start of 2 task ids: abcd1111-0000-4000-8000-000000000000, "
            "abcd2222-0000-4000-8000-000000000000; give more of the id\n")
    shown = json.loads(run(data_dir, "tasks", "get", "abcd2", "--json").stdout)
    assert shown["id"] == "abcd2222-0000-4000-8000-000000000000"
