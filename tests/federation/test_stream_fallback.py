"""A peer whose card says it streams but whose streams refuse is sent to and polled instead.

node-b's `relay` agent forwards to `node-c`, a scripted peer: its card says
`capabilities.streaming`, but it refuses message/stream (so the same message goes by
message/send, and is accepted, working) and tasks/resubscribe with a JSON-RPC error, then
answers `tasks/get` with the task completed. node-b's task must end
completed with node-c's artifact, and node-a's `delegate --wait` (following node-b, a real
node, by stream) must see it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.federation.harness import FedNode, artifact_texts, delegate, link, running
from tests.support.scripted_server import Answer, ScriptedServer

FOLLOW_TIMEOUT = "60"


def result(task: dict[str, object]) -> Answer:
    return Answer(body={"jsonrpc": "2.0", "result": task}, echo_id=True)


def c_task(state: str, artifacts: list[dict[str, object]] | None = None) -> dict[str, object]:
    return {"kind": "task", "id": "c-task-1", "contextId": "ctx-1", "status": {"state": state},
            "artifacts": artifacts or []}


@pytest.fixture()
def nodes(tmp_path: Path) -> Iterator[tuple[FedNode, FedNode, ScriptedServer]]:
    a = FedNode(tmp_path, "node-a", ["node-b"], {"echo": "echo"})
    b = FedNode(tmp_path, "node-b", ["node-a"], {"relay": "node-c/echo"})
    with ScriptedServer() as c, running(a, b):
        c.card = {"name": "node-c", "url": f"{c.url}/api/v1/a2a/", "skills": [],
                  "capabilities": {"streaming": True}}
        link(a, b)
        b.add_peer("node-c", c.url, "scripted-peer-secret")
        yield a, b, c


def test_a_refused_subscription_falls_back_to_polling(
    nodes: tuple[FedNode, FedNode, ScriptedServer],
) -> None:
    a, b, c = nodes
    refused = {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}}
    done = c_task("completed", [{"artifactId": "a-1", "parts": [{"kind": "text",
                                                                 "text": "done at C"}]}])
    c.script.extend([
        Answer(body=refused, echo_id=True),  # message/stream
        result(c_task("working")),  # message/send, the same message
        Answer(body=refused, echo_id=True),  # tasks/resubscribe
        *(result(done) for _ in range(4)),  # tasks/get
    ])
    code, record = delegate(a, "node-b", "polled job", "--agent", "relay", "--wait",
                            "--timeout", FOLLOW_TIMEOUT)
    assert code == 0, record
    assert record["state"] == "completed"
    assert artifact_texts(record["task"]) == ["done at C"]
    methods = [json.loads(r.body)["method"] for r in c.received if r.body]
    assert methods[:4] == ["message/stream", "message/send", "tasks/resubscribe", "tasks/get"]
    sent = [json.loads(r.body)["params"]["message"]["messageId"] for r in c.received[:2]]
    assert sent[0] == sent[1]  # the same message: one task, whichever call reached the peer
    at_b = b.cli_json("tasks", "get", record["remote_task_id"])
    assert at_b["task"]["status"]["state"] == "completed"
