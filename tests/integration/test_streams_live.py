"""message/stream and tasks/resubscribe over Server-Sent Events, on a live node.

The example agent (examples/slow_writer.py) writes its artifact in chunks; each stream is
read with a real HTTP client, event by event, and checked for the A2A 0.3 shapes, the
sequence ids, the replay after Last-Event-ID and the end after the final event.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.helpers import (
    RPC_PATH,
    TASK_NOT_FOUND,
    Json,
    call,
    cancel_task,
    envelope,
    expect_result,
    message,
    unique,
)
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

PEER, KEY = "peer-streams", "key-streams-8c1e5a3f7b2d"
OTHER, OTHER_KEY = "peer-other", "key-other-1a9c7e5b3d2f"

CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{PEER}, {OTHER}]
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
  - id: quick
    name: Quick writer
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {{seconds: 0.3, chunks: 3}}
  - id: slow
    name: Slow writer
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {{seconds: 60, chunks: 60}}
"""


@dataclass
class Event:
    id: int
    body: Json

    @property
    def result(self) -> Json:
        result = self.body["result"]
        assert isinstance(result, dict)
        return result


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir: Path = tmp_path_factory.mktemp("streams")
    add_peer(data_dir, PEER, KEY)
    add_peer(data_dir, OTHER, OTHER_KEY)
    with LiveNode(data_dir, CONFIG) as live:
        yield live


@pytest.fixture()
def client(node: LiveNode) -> Iterator[httpx.Client]:
    with node.client(PEER, KEY) as peer_client:
        yield peer_client


def events_of(response: httpx.Response, limit: int | None = None) -> Iterator[Event]:
    """Parse the SSE body as it arrives; comments (keep-alives) are skipped."""
    assert response.headers["content-type"].startswith("text/event-stream")
    for seen, event in enumerate(events_of_lines(response.iter_lines()), 1):
        yield event
        if limit is not None and seen >= limit:
            return


def events_of_lines(lines: Iterator[str]) -> Iterator[Event]:
    fields: dict[str, str] = {}
    for line in lines:
        if line.startswith(":"):
            continue
        if line == "":
            if fields:
                yield Event(int(fields["id"]), json.loads(fields["data"]))
                fields = {}
            continue
        name, _, value = line.partition(":")
        fields[name] = value.removeprefix(" ")


def errors_of(response: httpx.Response) -> Iterator[Json]:
    """The error events of a stream (they carry no id)."""
    assert response.headers["content-type"].startswith("text/event-stream")
    for line in response.iter_lines():
        if line.startswith("data:"):
            body = json.loads(line.removeprefix("data:"))
            assert "error" in body, body
            yield body


def open_stream(
    client: httpx.Client, method: str, params: Any, headers: dict[str, str] | None = None
) -> Any:
    return client.stream(
        "POST", RPC_PATH, json=envelope(method, params, "s-1"),
        headers={"Accept": "text/event-stream", **(headers or {})},
    )


def stream_message(agent: str, text: str = "hello") -> Json:
    return {"message": message(text, agent_id=agent)}


def test_a_stream_answers_the_task_then_each_chunk_then_the_final_status(
    client: httpx.Client,
) -> None:
    with open_stream(client, "message/stream", stream_message("quick", "hi")) as response:
        assert response.status_code == 200
        events = list(events_of(response))
    kinds = [e.result["kind"] for e in events]
    assert kinds[0] == "task"
    assert all(e.body["jsonrpc"] == "2.0" and e.body["id"] == "s-1" for e in events)
    ids = [e.id for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    chunks = [e.result for e in events if e.result["kind"] == "artifact-update"]
    assert [c["artifact"]["parts"][0]["text"] for c in chunks] == [
        f"[{n}] hi\n" for n in range(1, 4)
    ]
    assert [c.get("append", False) for c in chunks] == [False, True, True]
    assert chunks[-1]["lastChunk"] is True
    last = events[-1].result
    assert last["kind"] == "status-update" and last["final"] is True
    assert last["status"]["state"] == "completed"
    task_id = events[0].result["id"]
    assert all(e.result.get("taskId", task_id) == task_id for e in events)


def test_an_instant_agent_streams_its_task_and_ends(client: httpx.Client) -> None:
    with open_stream(client, "message/stream", stream_message("echo")) as response:
        events = list(events_of(response))
    assert events[0].result["kind"] == "task"
    assert events[-1].result["final"] is True
    assert events[-1].result["status"]["state"] == "completed"


def test_resubscribe_replays_what_was_missed_after_last_event_id_then_goes_live(
    client: httpx.Client,
) -> None:
    with open_stream(client, "message/stream", stream_message("slow", "long")) as response:
        first_three = list(events_of(response, limit=3))  # task, working, first chunk...
    task_id = first_three[0].result["id"]
    seen = first_three[1].id
    with open_stream(client, "tasks/resubscribe", {"id": task_id},
                     {"Last-Event-ID": str(seen)}) as response:
        assert response.status_code == 200
        replay = events_of(response)
        again = next(replay)
        assert again.id == first_three[2].id and again.body == first_three[2].body
        live = next(replay)  # a later chunk or status, written after the resubscribe
        assert live.id > again.id
        canceled = expect_result(cancel_task(client, task_id))
        assert canceled["status"]["state"] == "canceled"
        rest = list(replay)
    assert rest[-1].result["kind"] == "status-update"
    assert rest[-1].result["status"]["state"] == "canceled" and rest[-1].result["final"]


def test_resubscribe_without_last_event_id_starts_from_the_task_as_it_is(
    client: httpx.Client,
) -> None:
    task = expect_result(call(client, "message/send", stream_message("echo")))
    with open_stream(client, "tasks/resubscribe", {"id": task["id"]}) as response:
        events = list(events_of(response))
    assert len(events) == 1
    assert events[0].result["kind"] == "task" and events[0].result["id"] == task["id"]


def test_another_peers_task_cannot_be_followed(node: LiveNode, client: httpx.Client) -> None:
    task = expect_result(call(client, "message/send", stream_message("echo")))
    with node.client(OTHER, OTHER_KEY) as other, open_stream(
        other, "tasks/resubscribe", {"id": task["id"]}
    ) as response:
        [refusal] = list(errors_of(response))  # one error event, as streaming clients expect
    assert refusal["error"]["code"] == TASK_NOT_FOUND
    assert refusal["id"] == "s-1"


def test_streams_pass_the_gates_like_any_call(node: LiveNode) -> None:
    with node.client(PEER, "wrong-key") as stranger, open_stream(
        stranger, "message/stream", stream_message("echo")
    ) as response:
        assert response.status_code == 401
        assert response.headers["content-type"].startswith("application/json")


def test_a_resubscribe_at_or_past_the_end_of_the_log_answers_at_once(
    client: httpx.Client,
) -> None:
    task = expect_result(call(client, "message/send", stream_message("quick", "ask")))
    assert task["status"]["state"] == "input-required"
    with open_stream(client, "tasks/resubscribe", {"id": task["id"]}) as response:
        [now] = list(events_of(response))  # the task as it is: a stream ends at input-required
    logged = [event.id for event in replayed(client, task["id"], 0)]
    for last in (logged[-1], now.id, now.id + 5000, 10**18 - 1):
        with open_stream(client, "tasks/resubscribe", {"id": task["id"]},
                         {"Last-Event-ID": str(last)}) as response:
            assert response.status_code == 200
            [event] = list(events_of(response))
        assert event.result["kind"] == "task" and event.id == now.id
        assert event.result["status"]["state"] == "input-required"


def replayed(client: httpx.Client, task_id: str, after: int) -> list[Event]:
    with open_stream(client, "tasks/resubscribe", {"id": task_id},
                     {"Last-Event-ID": str(after)}) as response:
        return list(events_of(response))


def test_a_resubscribe_past_the_end_of_a_working_task_keeps_alive_then_follows(
    client: httpx.Client,
) -> None:
    with open_stream(client, "message/stream", stream_message("slow", "long")) as response:
        [first] = list(events_of(response, limit=1))
    task_id = first.result["id"]
    with open_stream(client, "tasks/resubscribe", {"id": task_id},
                     {"Last-Event-ID": str(10**18 - 1)}) as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        assert next(lines) == ": keep-alive"  # at once: nothing follows that id yet
        canceled = expect_result(cancel_task(client, task_id))
        assert canceled["status"]["state"] == "canceled"
        rest = list(events_of_lines(lines))
    assert rest[-1].result["status"]["state"] == "canceled"


def test_a_bad_last_event_id_is_invalid_params(client: httpx.Client) -> None:
    task = expect_result(call(client, "message/send", stream_message("echo")))
    with open_stream(client, "tasks/resubscribe", {"id": task["id"]},
                     {"Last-Event-ID": "not-a-number"}) as response:
        [refusal] = list(errors_of(response))
    assert refusal["error"]["code"] == -32602


def test_malformed_params_are_a_plain_json_error(client: httpx.Client) -> None:
    with open_stream(client, "tasks/resubscribe", {"id": ""}) as response:
        assert response.headers["content-type"].startswith("application/json")
        assert json.loads(response.read())["error"]["code"] == -32602


def test_a_follow_up_streams_from_the_task_as_it_is(client: httpx.Client) -> None:
    first = expect_result(call(client, "message/send", stream_message("quick", "ask")))
    assert first["status"]["state"] == "input-required"
    follow_up = message("more", task_id=first["id"], message_id=unique())
    with open_stream(client, "message/stream", {"message": follow_up}) as response:
        events = list(events_of(response))
    assert events[0].result["kind"] == "task"
    assert events[-1].result["status"]["state"] == "completed"
