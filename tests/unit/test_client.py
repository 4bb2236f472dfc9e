"""The outbound client against a real HTTP server on loopback that answers from a script."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Any

import pytest

from synthorg.delegation.client import A2AClient, RetryPolicy
from synthorg.delegation.errors import PeerProtocolError, PeerRpcError, PeerUnavailable
from synthorg.generated.models import V1TextPart
from synthorg.store.catalog import PeerRecord
from tests.support.scripted_server import Answer, ScriptedServer

SECRET = "s3cr3t-link-key"
HI = V1TextPart(text="hi")


def task_result(task_id: str = "t-1", state: str = "completed") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "result": {
            "kind": "task",
            "id": task_id,
            "contextId": "c-1",
            "status": {"state": state},
        },
    }


def record(url: str, scheme: str = "api_key") -> PeerRecord:
    return PeerRecord("node-b", url, scheme, SECRET, "2026-01-01", "2026-01-01")  # type: ignore[arg-type]


class Clock:
    """Collects backoff delays instead of waiting them out."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)


def make_client(url: str, clock: Clock, **kwargs: Any) -> A2AClient:
    return A2AClient(
        record(url, kwargs.pop("scheme", "api_key")),
        "node-a",
        lambda: 5.0,
        sleep=clock.sleep,
        **kwargs,
    )


def sent(server: ScriptedServer, index: int = 0) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(server.received[index].body)
    return body


def test_sends_peer_name_and_api_key_and_validates_task() -> None:
    with ScriptedServer() as server:
        server.script.append(Answer(body=task_result(), echo_id=True))
        task = asyncio.run(make_client(server.url, Clock()).get_task("t-1", history_length=2))
    assert task.id == "t-1" and task.status.state == "TASK_STATE_COMPLETED"
    request = server.received[0]
    assert request.path == "/api/v1/a2a/"
    assert request.headers["X-A2A-Peer-Name"] == "node-a"
    assert request.headers["X-API-Key"] == SECRET
    assert sent(server)["params"] == {"id": "t-1", "historyLength": 2}


def test_bearer_scheme_uses_authorization_header_only() -> None:
    with ScriptedServer() as server:
        server.script.append(Answer(body=task_result(), echo_id=True))
        asyncio.run(make_client(server.url, Clock(), scheme="bearer").get_task("t-1"))
    headers = server.received[0].headers
    assert headers["Authorization"] == f"Bearer {SECRET}"
    assert "X-API-Key" not in headers


def test_retries_503_and_keeps_the_message_id() -> None:
    clock = Clock()
    with ScriptedServer() as server:
        server.script.extend(
            [Answer(503, b""), Answer(502, b"{}"), Answer(body=task_result(), echo_id=True)]
        )
        task = asyncio.run(
            make_client(server.url, clock).send_message([HI])
        )
    assert task.id == "t-1"
    ids = {sent(server, i)["params"]["message"]["messageId"] for i in range(3)}
    assert len(ids) == 1, "messageId must stay the same across retries"
    assert len(clock.delays) == 2 and all(0 <= d <= 5.0 for d in clock.delays)


def test_429_honours_retry_after() -> None:
    clock = Clock()
    with ScriptedServer() as server:
        server.script.extend(
            [Answer(429, b"", {"Retry-After": "3"}), Answer(body=task_result(), echo_id=True)]
        )
        asyncio.run(make_client(server.url, clock).get_task("t-1"))
    assert clock.delays == [3.0]


def test_gives_up_after_bounded_attempts() -> None:
    clock = Clock()
    with ScriptedServer() as server:
        server.script.extend([Answer(503, b"")] * 3)
        client = make_client(server.url, clock, retry=RetryPolicy(attempts=3))
        with pytest.raises(PeerUnavailable, match="gave up after 3 attempts"):
            asyncio.run(client.get_task("t-1"))
    assert len(server.received) == 3 and len(clock.delays) == 2


def test_connection_refused_is_retried_then_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: connections are refused
        clock = Clock()
        client = make_client(f"http://127.0.0.1:{port}", clock, retry=RetryPolicy(attempts=2))
        with pytest.raises(PeerUnavailable, match="cannot connect"):
            asyncio.run(client.get_task("t-1"))
    assert len(clock.delays) == 1


@pytest.mark.parametrize("status", [200, 401, 403])
def test_peer_jsonrpc_error_surfaces_with_code_whatever_the_status(status: int) -> None:
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32003, "message": "nope"}}
    with ScriptedServer() as server:
        server.script.append(Answer(status, error))
        with pytest.raises(PeerRpcError) as caught:
            asyncio.run(make_client(server.url, Clock()).get_task("t-1"))
    assert caught.value.code == -32003 and caught.value.http_status == status
    assert SECRET not in str(caught.value)


def test_mismatched_response_id_is_a_protocol_error() -> None:
    with ScriptedServer() as server:
        server.script.append(Answer(body={**task_result(), "id": "someone-else"}))
        with pytest.raises(PeerProtocolError, match="id does not match"):
            asyncio.run(make_client(server.url, Clock()).get_task("t-1"))


def test_invalid_task_result_is_a_protocol_error() -> None:
    bad = task_result()
    bad["result"]["status"] = {"state": "exploded"}
    with ScriptedServer() as server:
        server.script.append(Answer(body=bad, echo_id=True))
        with pytest.raises(PeerProtocolError, match="not a valid Task"):
            asyncio.run(make_client(server.url, Clock()).get_task("t-1"))


def test_oversized_response_is_refused() -> None:
    huge = task_result()
    huge["result"]["metadata"] = {"pad": "x" * 5000}
    with ScriptedServer() as server:
        server.script.append(Answer(body=huge, echo_id=True))
        client = make_client(server.url, Clock(), max_response_bytes=1024)
        with pytest.raises(PeerProtocolError, match="larger than 1024 bytes"):
            asyncio.run(client.get_task("t-1"))


def test_timeout_comes_from_the_live_setting() -> None:
    release = threading.Event()
    timeouts = [5.0]
    with ScriptedServer() as server:
        server.script.append(Answer(body=task_result(), echo_id=True, hold=release))
        client = A2AClient(record(server.url), "node-a", lambda: timeouts[0], sleep=Clock().sleep)
        timeouts[0] = 0.2  # changed after the client was built: the next call uses it
        try:
            with pytest.raises(PeerUnavailable, match=r"no answer within 0\.2s"):
                asyncio.run(client.get_task("t-1"))
        finally:
            release.set()


def test_non_json_answer_is_a_protocol_error() -> None:
    with ScriptedServer() as server:
        server.script.append(Answer(500, b"<html>oops</html>"))
        with pytest.raises(PeerProtocolError, match="HTTP 500"):
            asyncio.run(make_client(server.url, Clock()).get_task("t-1"))


def test_a_message_result_stands_for_a_completed_task() -> None:
    """Agents built on the official SDK may answer message/send with a Message."""
    reply = {"jsonrpc": "2.0", "result": {
        "kind": "message", "messageId": "r-1", "role": "agent",
        "parts": [{"kind": "text", "text": "done at once"}],
    }}
    with ScriptedServer() as server:
        server.script.extend([Answer(body=reply, echo_id=True)] * 2)
        client = make_client(server.url, Clock())
        task = asyncio.run(client.send_message([HI]))
        again = asyncio.run(client.send_message([HI]))
    assert task.status.state == "TASK_STATE_COMPLETED"
    assert task.status.message is not None and task.status.message.messageId == "r-1"
    assert task.history == [task.status.message]
    assert again.id == task.id  # the same reply stands for the same task


def test_a_non_blocking_send_says_so() -> None:
    with ScriptedServer() as server:
        server.script.append(Answer(body=task_result(state="working"), echo_id=True))
        asyncio.run(make_client(server.url, Clock()).send_message(
            [HI], blocking=False
        ))
    assert sent(server)["params"]["configuration"] == {"blocking": False}
