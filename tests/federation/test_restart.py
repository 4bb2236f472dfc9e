"""B is SIGKILLed and restarted (same data dir, same port) while A holds and follows tasks on it.

node-a and node-b are linked through the CLI. node-b's `relay` agent forwards to `node-c`, a
scripted peer that accepts the task and reports it `working`, so node-b's task stays
unfinished: that is the task node-a follows across the crash, and node-b resumes.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.federation.harness import (
    FedNode,
    artifact_texts,
    delegate,
    link,
    running,
)
from tests.support.node import ROOT
from tests.support.scripted_server import Answer, ScriptedServer

EXIT_PEER = 3
LINE_TIMEOUT = 30.0


@dataclass
class Pair:
    a: FedNode
    b: FedNode
    c: ScriptedServer


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    root: Path = tmp_path_factory.mktemp("restart")
    a = FedNode(root, "node-a", ["node-b"], {"echo": "echo"})
    b = FedNode(root, "node-b", ["node-a"], {
        "echo": "echo", "parker": "park", "relay": "node-c/echo",
    })
    with ScriptedServer() as c, running(a, b):
        link(a, b)
        b.add_peer("node-c", c.url, "scripted-peer-secret")
        yield Pair(a, b, c)


def working_task(task_id: str) -> dict[str, object]:
    task = {"kind": "task", "id": task_id, "contextId": "ctx-1", "status": {"state": "working"}}
    return {"jsonrpc": "2.0", "result": task}


class Lines:
    """A subprocess's stdout, line by line, awaited with a deadline (no polling)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, fragment: str) -> str:
        while True:
            line = self._queue.get(timeout=LINE_TIMEOUT)
            if line is None:
                raise AssertionError(f"ended before {fragment!r}: {self.seen}")
            self.seen.append(line)
            if fragment in line:
                return line


def test_acknowledged_tasks_survive_sigkill_and_stay_usable(pair: Pair) -> None:
    a, b = pair.a, pair.b
    _, done = delegate(a, "node-b", "before the crash", "--agent", "echo")
    _, parked = delegate(a, "node-b", "parked across the crash", "--agent", "parker", "--wait")
    b.kill()
    # While B is down: a clear error, and A's records are all still there.
    down = a.cli("tasks", "get", parked["id"], "--refresh")
    assert down.returncode == EXIT_PEER
    assert down.stderr.startswith("error: peer node-b unavailable: ")
    listed = {r["id"] for r in a.cli_json("tasks", "list", "--outbound")["outbound"]}
    assert {done["id"], parked["id"]} <= listed
    b.restart()
    # Same port: A's catalog record is still right, and B still has both tasks.
    again = a.cli_json("tasks", "get", done["id"], "--refresh")
    assert again["state"] == "completed"
    assert artifact_texts(again["task"]) == ["before the crash"]
    still = a.cli_json("tasks", "get", parked["id"], "--refresh")
    assert still["state"] == "input-required"
    assert still["task"]["history"][0]["parts"][0]["text"] == "parked across the crash"
    canceled = a.cli("tasks", "cancel", parked["id"])
    assert canceled.returncode == 0, canceled.stderr


def completed_task(task_id: str, text: str) -> dict[str, object]:
    artifact = {"artifactId": "a-1", "parts": [{"kind": "text", "text": text}]}
    task = {"kind": "task", "id": task_id, "contextId": "ctx-1",
            "status": {"state": "completed"}, "artifacts": [artifact]}
    return {"jsonrpc": "2.0", "result": task}


def test_a_follows_a_task_while_b_is_killed_and_restarted(pair: Pair) -> None:
    """B forwarded the task to C; killed meanwhile, B resumes following C when it starts
    again (instead of failing the task), and A's follow sees the task end with C's result."""
    a, b = pair.a, pair.b
    pair.c.script.append(Answer(body=working_task("c-task-1"), echo_id=True))
    code, record = delegate(a, "node-b", "long job", "--agent", "relay")
    assert code == 0 and record["state"] in ("submitted", "working"), record
    follow = subprocess.Popen(
        [sys.executable, "-m", "synthorg.cli.main", "tasks", "follow", record["id"],
         "--timeout", "60", "--data-dir", str(a.data_dir)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        lines = Lines(follow)
        lines.wait_for("] working")
        b.kill()
        lines.wait_for("could not reach node-b")
        # C finishes while B is down; B, started again, finds that out and ends its task.
        pair.c.script.clear()
        pair.c.script.extend(
            Answer(body=completed_task("c-task-1", "done at C"), echo_id=True)
            for _ in range(8)
        )
        b.restart()
        b_events = b.events("a2a.task.recovered")
        lines.wait_for("] completed")
        assert follow.wait(timeout=LINE_TIMEOUT) == 0
    finally:
        if follow.poll() is None:
            follow.kill()
        follow.wait()
    assert b_events == []  # nothing failed at B's start: the forwarded task was resumed
    final = a.cli_json("tasks", "get", record["id"])
    assert final["state"] == "completed"
    assert artifact_texts(final["task"]) == ["done at C"]
    at_b = b.cli_json("tasks", "get", record["remote_task_id"])
    assert at_b["peer"] == "node-a"
    assert at_b["task"]["history"][0]["parts"][0]["text"] == "long job"
    assert at_b["task"]["status"]["state"] == "completed"
