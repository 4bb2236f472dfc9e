"""A -> B -> C followed to its end while C and then B are killed and started again.

node-a delegates (`delegate --wait`, the CLI) to node-b's `relay` agent, which forwards to
node-c's slow writer. Mid-task node-c is SIGKILLed and started again on the same data dir and
port (its writer resumes from the chunks it stored), then node-b (its recovery resumes
following node-c instead of failing the forwarded task), then node-a (whose receiver takes
the pushes the CLI reads). The task on node-a must end completed with node-c's whole answer,
each chunk once.

Twice: followed by push (node-a and node-b name a public url, so each asks its peer to push
to it) and followed by stream (no public url: each follows its peer with tasks/resubscribe,
resumed with Last-Event-ID when the stream drops).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.federation.harness import FedNode, artifact_texts, link, running
from tests.integration.test_streams_live import events_of
from tests.support.node import ROOT

CHUNKS, SECONDS = 10, 10.0  # node-c's writer: one chunk a second
TEXT = "the long answer"
WRITER = (
    "agents:\n  - id: writer\n    name: Writer\n    executor:\n      kind: python\n"
    "      entrypoint: examples.slow_writer:factory\n"
    f"      options: {{seconds: {SECONDS}, chunks: {CHUNKS}}}\n"
)
FOLLOW_TIMEOUT = 120.0


def chunks_at(node: FedNode, peer: str, secret: str, task_id: str, count: int) -> int:
    """Wait (on the node's own stream of the task, no polling) until its answer has at least
    `count` chunks; how many it has then."""
    body = {"jsonrpc": "2.0", "id": "w", "method": "tasks/resubscribe",
            "params": {"id": task_id}}
    headers = {"X-A2A-Peer-Name": peer, "X-API-Key": secret, "Accept": "text/event-stream"}
    seen = 0
    with httpx.Client(base_url=node.url, timeout=60.0) as client, client.stream(
        "POST", "/api/v1/a2a/", json=body, headers=headers
    ) as response:
        for event in events_of(response):
            result = event.result
            if result["kind"] == "task":
                seen = sum(len(a["parts"]) for a in result.get("artifacts") or [])
            elif result["kind"] == "artifact-update":
                parts = len(result["artifact"]["parts"])
                seen = seen + parts if result.get("append") else parts
            if seen >= count or result.get("final"):
                return seen
    raise AssertionError(f"the stream of {task_id} ended at {seen} chunks")


@pytest.mark.parametrize("how", ["push", "stream", "stream-workers"])
def test_a_follows_b_and_c_to_the_end_across_their_restarts(tmp_path: Path, how: str) -> None:
    """`stream-workers`: node-b serves with two worker processes, so the task its start-up
    keeps for resuming is taken over, and resumed, by one of its workers."""
    public = how == "push"
    a = FedNode(tmp_path, "node-a", ["node-b"], {"echo": "echo"}, public=public)
    b = FedNode(tmp_path, "node-b", ["node-a", "node-c"], {"relay": "node-c/writer"},
                public=public)
    if how == "stream-workers":
        b.env["SYNTHORG_WORKERS"] = "2"
    c = FedNode(tmp_path, "node-c", ["node-b"], WRITER)
    with running(a, b, c):
        link(a, b)
        bc_secret = link(b, c)
        follow = subprocess.Popen(
            [sys.executable, "-m", "synthorg.cli.main", "delegate", "node-b", TEXT,
             "--agent", "relay", "--wait", "--timeout", str(FOLLOW_TIMEOUT), "--json",
             "--data-dir", str(a.data_dir)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            at_c = c.wait_for_event("a2a.task.created", timeout=30.0)["task_id"]
            assert chunks_at(c, "node-b", bc_secret, at_c, 1) < CHUNKS
            c.kill()
            c.restart()
            c.wait_for_event("a2a.task.resumed", task_id=at_c)
            assert chunks_at(c, "node-b", bc_secret, at_c, 3) < CHUNKS  # still mid-task
            b.kill()
            b.restart()
            b.wait_for_event("a2a.task.resumed")
            a.kill()  # the follower's own node: by push, its receiver is what it reads
            a.restart()
            out, err = follow.communicate(timeout=FOLLOW_TIMEOUT + 30)
        finally:
            if follow.poll() is None:
                follow.kill()
                follow.communicate()
        assert follow.returncode == 0, err
        record = json.loads(out)
        assert record["state"] == "completed", record
        expected = [f"[{n}] {TEXT}\n" for n in range(1, CHUNKS + 1)]
        assert artifact_texts(record["task"]) == expected  # every chunk, once, in order
        # Nothing was failed by a restart: both resumed what they had.
        assert c.events("a2a.task.recovered") == [] and b.events("a2a.task.recovered") == []
        at_b = b.cli_json("tasks", "get", record["remote_task_id"])
        assert at_b["task"]["status"]["state"] == "completed"
        assert artifact_texts(at_b["task"]) == expected
        if public:  # followed by push: the ends saw their peer's signed pushes
            a.wait_for_event("a2a.push.received", peer_name="node-b", state="completed")
        else:  # followed by stream: each follower subscribed again to its restarted peer
            # (node to node in A2A 1.0, their cards offering it first)
            c.wait_for_event("a2a.inbound.completed", method="SubscribeToTask",
                             peer_name="node-b")
            b.wait_for_event("a2a.inbound.completed", method="SubscribeToTask",
                             peer_name="node-a")
            assert b.events("a2a.follow.stream_abandoned") == []
