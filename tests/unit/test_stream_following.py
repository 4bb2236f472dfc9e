"""Following by stream, its pure parts: reading SSE bytes with bounds, and applying events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from synthorg.delegation.errors import PeerProtocolError
from synthorg.delegation.following import apply_event
from synthorg.delegation.sse_client import SseEvent, StreamTooLarge, sse_events, stream_event
from synthorg.dialects.objects import event_v03_json, event_v1_json, task_v1
from synthorg.generated.models import Task, V1StreamResponse, V1Task, V1TaskStatus, V1TextPart
from synthorg.store.task_codec import dumps, loads


async def _chunks(*pieces: bytes) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


def _read(*pieces: bytes, limit: int = 1024) -> list[SseEvent]:
    async def collect() -> list[SseEvent]:
        return [event async for event in sse_events(_chunks(*pieces), limit)]

    return asyncio.run(collect())


def test_events_are_read_across_chunk_boundaries_and_keepalives_skipped() -> None:
    events = _read(b": keep-alive\n\nid: 7\nda", b"ta: {\"a\":\n", b"data: 1}\r\n\r\nid: 9\n",
                   b"data: x\n\n")
    assert events == [SseEvent("7", '{"a":\n1}'), SseEvent("9", "x")]


def test_an_event_or_a_line_past_the_bound_is_refused() -> None:
    with pytest.raises(StreamTooLarge):
        _read(b"data: " + b"x" * 40 + b"\n", b"data: " + b"y" * 40 + b"\n\n", limit=64)
    with pytest.raises(StreamTooLarge):
        _read(b"data: " + b"z" * 100, limit=64)  # no line end in sight


TASK: dict[str, Any] = {
    "kind": "task", "id": "t-1", "contextId": "c-1", "status": {"state": "working"},
    "artifacts": [],
}


def _artifact_event(text: str, append: bool) -> dict[str, Any]:
    return {"kind": "artifact-update", "taskId": "t-1", "contextId": "c-1", "append": append,
            "artifact": {"artifactId": "a-1", "parts": [{"kind": "text", "text": text}]}}


def _event(result: Any) -> V1StreamResponse:
    return stream_event("node-b", result)


def _texts(task: V1Task) -> list[str]:
    assert task.artifacts
    return [p.text for p in task.artifacts[0].parts if isinstance(p, V1TextPart)]


def _task(document: dict[str, Any]) -> V1Task:
    return task_v1(Task.model_validate(document))


def test_events_build_the_task_as_the_peer_has_it() -> None:
    task = _task(TASK)
    task = apply_event(task, _event(_artifact_event("one", False)), "t-1")
    task = apply_event(task, _event(_artifact_event("two", True)), "t-1")
    status = {"kind": "status-update", "taskId": "t-1", "contextId": "c-1", "final": True,
              "status": {"state": "completed"}}
    task = apply_event(task, _event(status), "t-1")
    assert task.status == V1TaskStatus(state="TASK_STATE_COMPLETED")
    assert _texts(task) == ["one", "two"]
    replaced = apply_event(task, _event(_artifact_event("new", False)), "t-1")
    assert _texts(replaced) == ["new"]
    # a delegation keeps the 1.0 task: a task read back is the task written
    assert loads(dumps(replaced)) == replaced


def test_an_event_of_another_task_or_no_event_at_all_is_refused() -> None:
    task = _task(TASK)
    with pytest.raises(PeerProtocolError):
        apply_event(task, _event({**TASK, "id": "t-2"}), "t-1")
    with pytest.raises(PeerProtocolError, match="node-b: a stream event that is not valid"):
        _event({"kind": "status-update", "taskId": "t-1"})
    with pytest.raises(PeerProtocolError):
        _event(["not", "an", "event"])
    with pytest.raises(PeerProtocolError, match="not a StreamResponse"):
        stream_event("node-b", {"task": {}, "message": {}}, speaks_v1=True)


def test_an_artifact_appended_past_the_spec_bound_is_refused() -> None:
    parts = [{"kind": "text", "text": str(n)} for n in range(600)]
    grown = {"kind": "artifact-update", "taskId": "t-1", "contextId": "c-1", "append": True,
             "artifact": {"artifactId": "a-1", "parts": parts}}
    task = apply_event(_task(TASK), _event({**grown, "append": False}), "t-1")
    with pytest.raises(PeerProtocolError, match="past the spec's bounds"):
        apply_event(task, _event(grown), "t-1")


@pytest.mark.parametrize("event", [
    TASK,
    _artifact_event("one", True),
    {"kind": "status-update", "taskId": "t-1", "contextId": "c-1", "final": True,
     "status": {"state": "input-required", "message": {
         "kind": "message", "messageId": "m-1", "role": "agent",
         "parts": [{"kind": "text", "text": "more?"}]}}},
    {"kind": "status-update", "taskId": "t-1", "contextId": "c-1", "final": False,
     "status": {"state": "working"}},
])
def test_a_1_0_stream_event_reads_back_as_the_0_3_event_it_stands_for(
    event: dict[str, Any],
) -> None:
    assert event_v03_json(event_v1_json(event)) == event


def test_what_is_not_a_stream_response_is_refused() -> None:
    for bad in ({}, {"task": {}, "message": {}}, {"other": {}}):
        with pytest.raises((ValueError, KeyError)):
            event_v03_json(bad)
