"""A 1.0 peer's answers read as 1.0 (synthorg/delegation/client.py, sse_client.py): what 1.0
defines and 0.3 cannot carry (a text or data part's mediaType and filename) reaches the task
the client returns and the delegation record keeps; members 1.0 does not define are dropped;
an invalid answer is refused as before. Against a real HTTP server on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from synthorg.delegation.client import A2AClient
from synthorg.delegation.delegator import Delegator
from synthorg.delegation.errors import PeerProtocolError
from synthorg.delegation.sse_client import stream_event
from synthorg.dialects.outbound import PeerDialect
from synthorg.generated.models import (
    V1ArtifactUpdatePayload,
    V1DataPart,
    V1Message,
    V1TextPart,
)
from synthorg.store.catalog import PeerRecord
from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import open_database
from synthorg.store.sqlite.delegations import SqliteDelegationStore
from tests.support.scripted_server import Answer, ScriptedServer

SECRET = "v1-answers-link-secret-9d2f"
# Parts with members 1.0 defines and 0.3's text and data parts do not have
MARKDOWN = {"text": "# Summary", "mediaType": "text/markdown", "filename": "summary.md",
            "metadata": {"lines": 1}}
FIGURES = {"data": {"growth": 0.04}, "mediaType": "application/json", "filename": "f.json"}
KEPT = [V1TextPart(text="# Summary", mediaType="text/markdown", filename="summary.md",
                   metadata={"lines": 1}),
        V1DataPart(data={"growth": 0.04}, mediaType="application/json", filename="f.json")]


def answer(result: Any) -> Answer:
    return Answer(body={"jsonrpc": "2.0", "result": result}, echo_id=True)


def completed_task(**extra: Any) -> dict[str, Any]:
    reply = {"messageId": "m-2", "role": "ROLE_AGENT", "parts": [MARKDOWN], "later": 1,
             "extensions": ["https://example.org/ext"], "referenceTaskIds": ["t-0"]}
    return {
        "id": "t-1", "contextId": "c-1", "revision": 7,
        "status": {"state": "TASK_STATE_COMPLETED", "message": reply, "why": "done"},
        "artifacts": [{"artifactId": "a-1", "parts": [{**MARKDOWN, "lang": "en"}, FIGURES],
                       "extensions": ["https://example.org/ext"], "checksum": "x"}],
        "history": [reply],
        **extra,
    }


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


@pytest.fixture
def peer(server: ScriptedServer) -> ScriptedServer:
    server.script.clear()
    server.received.clear()
    server.card = None
    return server


def client(url: str) -> A2AClient:
    record = PeerRecord("node-b", url, "api_key", SECRET, "2026-01-01", "2026-01-01")  # type: ignore[arg-type]
    return A2AClient(record, "node-a", lambda: 5.0, dialect=PeerDialect("1.0", url + "/rpc"))


def test_a_task_answer_keeps_what_1_0_defines_and_drops_the_rest(peer: ScriptedServer) -> None:
    peer.script.append(answer(completed_task()))
    task = asyncio.run(client(peer.url).get_task("t-1"))
    assert task.artifacts is not None and task.artifacts[0].parts == KEPT
    assert task.artifacts[0].extensions == ["https://example.org/ext"]
    assert task.status.message is not None and task.status.message.parts == KEPT[:1]
    assert task.history == [task.status.message]
    assert task.status.message.referenceTaskIds == ["t-0"]
    assert task.status.message.extensions == ["https://example.org/ext"]
    assert "revision" not in task.model_dump(by_alias=True)


def test_a_message_answer_stands_for_a_task_completed_with_it(peer: ScriptedServer) -> None:
    reply = {"messageId": "m-9", "role": "ROLE_AGENT", "parts": [MARKDOWN], "mood": "good"}
    peer.script.append(answer({"message": reply}))
    task = asyncio.run(client(peer.url).send_message([V1TextPart(text="hi")]))
    assert task.status.state == "TASK_STATE_COMPLETED"
    assert task.status.message == V1Message(
        messageId="m-9", role="ROLE_AGENT", parts=KEPT[:1], taskId=task.id,
        contextId=task.contextId)
    assert task.history == [task.status.message] and task.artifacts == []


def test_an_invalid_answer_is_refused_as_before(peer: ScriptedServer) -> None:
    bad = completed_task()
    bad["status"] = {"state": "exploded", "why": "?"}
    peer.script.append(answer(bad))
    with pytest.raises(PeerProtocolError, match=r"^node-b: GetTask result is not a valid Task "
                       r"\(1 problems\)$"):
        asyncio.run(client(peer.url).get_task("t-1"))
    peer.script.append(answer({"message": {"messageId": "m-1", "role": "ROLE_AGENT"}}))
    with pytest.raises(PeerProtocolError, match=r"^node-b: SendMessage result is not a valid "
                       r"Message \(1 problems\)$"):
        asyncio.run(client(peer.url).send_message([V1TextPart(text="hi")]))


def test_a_stream_event_keeps_what_1_0_defines() -> None:
    event = stream_event("node-b", {"artifactUpdate": {
        "taskId": "t-1", "contextId": "c-1", "append": False, "seq": 3,
        "artifact": {"artifactId": "a-1", "parts": [MARKDOWN, FIGURES], "x": 1}}},
        speaks_v1=True)
    assert isinstance(event, V1ArtifactUpdatePayload)
    assert event.artifactUpdate.artifact.parts == KEPT
    assert event.artifactUpdate.append is False
    with pytest.raises(PeerProtocolError, match="a stream event that is not valid"):
        stream_event("node-b", {"statusUpdate": {"taskId": "t-1"}}, speaks_v1=True)
    with pytest.raises(PeerProtocolError, match="not a StreamResponse"):
        stream_event("node-b", {"task": completed_task(), "future": {}}, speaks_v1=True)


def test_the_delegation_record_keeps_what_1_0_defines(
    peer: ScriptedServer, tmp_path: Path
) -> None:
    db = open_database(tmp_path)
    try:
        catalog = SqliteCatalog(db, SecretBox.for_data_dir(tmp_path))
        catalog.put("node-b", peer.url, "api_key", SECRET)
        store = SqliteDelegationStore(db)
        card = {"name": "node-b", "skills": [], "url": peer.url + "/rpc", "supportedInterfaces": [
            {"url": peer.url + "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]}
        peer.card = card  # served outside the script
        peer.script.append(answer({"task": completed_task()}))
        delegator = Delegator(catalog, store, "node-a", lambda: 5.0)
        record = asyncio.run(delegator.delegate("node-b", [V1TextPart(text="hi")]))
        assert peer.received[-1].path == "/rpc"  # asked in 1.0, at the card's interface
        stored = asyncio.run(store.get(record.id))
        assert stored is not None and stored.task.artifacts is not None
        assert stored.task.artifacts[0].parts == KEPT
    finally:
        db.close()
