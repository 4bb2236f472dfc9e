"""A follow-up that node-b stored but never forwarded (a crash between the two) reaches
node-c once node-b is back.

node-a (this test, as a peer of node-b) sends to node-b's `relay` agent, which forwards to
node-c's slow writer; the writer asks what to write about (input-required), and node-b
relays the question. node-a answers. node-b stores the answer, and its forwarding to node-c
never arrives: node-b reaches node-c through a TCP relay that now drops what it is sent. Then
node-b is killed (kill -9) and started again. It resumes the task and must forward the answer
node-c does not hold, rather than go back to node-c's old question, and the task ends with
node-c's writing about it.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import httpx

from tests.federation.harness import FedNode, artifact_texts, running
from tests.integration.test_streams_live import events_of, open_stream
from tests.support.tcp_proxy import TcpProxy

WRITER = (
    "agents:\n  - id: writer\n    name: Writer\n    executor:\n      kind: python\n"
    "      entrypoint: examples.slow_writer:factory\n"
    "      options: {seconds: 0.5, chunks: 2}\n"
)
Json = dict[str, Any]


def send(client: httpx.Client, message: Json, blocking: bool = True) -> Json:
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": message, "configuration": {"blocking": blocking}}}
    answer = client.post("/api/v1/a2a/", json=body).json()
    assert "result" in answer, answer
    result: Json = answer["result"]
    return result


def text_message(text: str, **extra: Any) -> Json:
    return {"kind": "message", "messageId": secrets.token_hex(8), "role": "user",
            "parts": [{"kind": "text", "text": text}], **extra}


def settled(client: httpx.Client, task_id: str) -> Json:
    """The task once its stream ends (final, or waiting for input): followed, not polled."""
    with open_stream(client, "tasks/resubscribe", {"id": task_id}) as response:
        events = list(events_of(response))
    last = events[-1].result
    task = client.post("/api/v1/a2a/", json={
        "jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task_id}}).json()
    assert task["result"]["status"]["state"] == last["status"]["state"], (task, last)
    result: Json = task["result"]
    return result


def users_said(task: Json) -> list[str]:
    return [part["text"] for message in task.get("history") or [] if message["role"] == "user"
            for part in message["parts"] if part["kind"] == "text"]


def test_a_follow_up_stored_but_not_forwarded_before_a_crash_is_forwarded_on_resume(
    tmp_path: Path,
) -> None:
    b = FedNode(tmp_path, "node-b", ["node-a", "node-c"], {"relay": "node-c/writer"})
    c = FedNode(tmp_path, "node-c", ["node-b"], WRITER)
    with running(b, c), TcpProxy("127.0.0.1", c.port) as to_c:
        link, a_secret = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        b.add_peer("node-c", f"http://127.0.0.1:{to_c.port}", link)
        c.add_peer("node-b", b.url, link)
        b.add_peer("node-a", "http://127.0.0.1:9", a_secret)
        with b.client("node-a", a_secret) as as_a:
            task_id = send(as_a, text_message("ask", metadata={"agentId": "relay"}))["id"]
            asked = settled(as_a, task_id)
            assert asked["status"]["state"] == "input-required", asked
            at_c = c.wait_for_event("a2a.task.created")["task_id"]
            to_c.hold()  # from now on node-c receives nothing node-b sends
            answered = send(as_a, text_message("dragons", taskId=task_id, contextId=asked[
                "contextId"]), blocking=False)
            assert answered["status"]["state"] == "working"  # stored at node-b
        b.kill()
        assert users_said(c.cli_json("tasks", "get", at_c)["task"]) == ["ask"]  # not forwarded
        to_c.cut()
        to_c.restore()
        b.restart()
        b.wait_for_event("a2a.task.resumed", task_id=task_id)
        with b.client("node-a", a_secret) as as_a:
            final = settled(as_a, task_id)
        assert final["status"]["state"] == "completed", final
        assert artifact_texts(final) == ["[1] dragons\n", "[2] dragons\n"]
        assert users_said(c.cli_json("tasks", "get", at_c)["task"]) == ["ask", "dragons"]
