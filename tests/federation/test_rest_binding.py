"""Delegation in the HTTP+JSON binding, between two real nodes: node-a's operator sets
`peers add --binding HTTP+JSON` on node-b's record, and every call of a delegation (send,
stream, get, cancel) goes to node-b's HTTP+JSON routes; the CLI says which binding it used.

    node-a  allows node-b   (the operator's node: the CLI runs on its data dir)
    node-b  allows node-a   agents: writer (progress and artifact chunks, about a second),
                            patient (the same, 6 s), slowpoke (a minute), echo
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from pathlib import Path
from typing import Any

from synthorg.clock import utc_now
from synthorg.delegation.client import A2AClient
from synthorg.delegation.rest_binding import default_rest_url
from synthorg.delegation.sse_client import stream_call
from synthorg.dialects.outbound import PeerDialect
from synthorg.generated.constants import V1_SUBSCRIBE_TO_TASK
from synthorg.generated.models import V1StatusUpdatePayload, V1SubscribeToTaskParams
from synthorg.store.catalog import PeerRecord
from tests.federation.harness import FedNode, Pair, artifact_texts, linked_pair

REST, JSONRPC = "HTTP+JSON", "JSONRPC"
BINDING = REST  # node-a's calls to node-b (the `nodes` fixture, conftest.py)


def operations_from_a(b: FedNode) -> list[str]:
    """The A2A operations node-b served node-a (the card fetches aside)."""
    return [e["operation"] for e in b.events("a2a.inbound.completed")
            if e.get("peer_name") == "node-a" and e["operation"].startswith("gateway.")]


def delegated(a: FedNode, *args: str) -> dict[str, Any]:
    result = a.cli("delegate", "node-b", *args, "--json")
    assert result.returncode == 0, result.stderr
    record: dict[str, Any] = json.loads(result.stdout)
    return record


def test_the_record_shows_the_binding(nodes: Pair) -> None:
    a, _ = nodes
    assert a.cli_json("peers", "show", "node-b")["binding"] == REST
    shown = a.cli("peers", "show", "node-b")
    assert re.search(r"binding:\s+HTTP\+JSON", shown.stdout), shown.stdout


def test_a_delegation_followed_by_stream_goes_over_http_json(
    nodes: Pair,
) -> None:
    a, b = nodes
    record = delegated(a, "write it", "--agent", "writer", "--wait")
    assert record["state"] == "completed" and record["binding"] == REST
    assert len(artifact_texts(record["task"])) == 3  # every chunk, appended in order
    served = operations_from_a(b)
    assert "gateway.rest.send_streaming_message" in served
    assert not [op for op in served if not op.startswith("gateway.rest.")], served
    # what the remote task is at node-b, read over HTTP+JSON too
    again = a.cli_json("tasks", "get", record["id"], "--refresh")
    assert again["state"] == "completed" and again["binding"] == REST
    assert "gateway.rest.get_task" in operations_from_a(b)


def test_the_cli_says_which_binding_it_used(nodes: Pair) -> None:
    a, _ = nodes
    shown = a.cli("delegate", "node-b", "hello", "--agent", "echo")
    assert shown.returncode == 0, shown.stderr
    assert "delegated to node-b, agent echo over HTTP+JSON" in shown.stdout
    local = re.search(r"local id\s+(\S+)", shown.stdout)
    assert local, shown.stdout
    got = a.cli("tasks", "get", local.group(1))
    assert re.search(r"binding\s+HTTP\+JSON", got.stdout), got.stdout
    listed = a.cli("tasks", "list", "--outbound")
    assert "BINDING" in listed.stdout
    row = next(line for line in listed.stdout.splitlines() if line.startswith(local.group(1)))
    assert REST in row.split()


def test_cancel_goes_over_http_json(nodes: Pair) -> None:
    a, b = nodes
    record = delegated(a, "long", "--agent", "slowpoke")
    assert record["binding"] == REST and record["state"] in ("submitted", "working")
    canceled = a.cli("tasks", "cancel", record["id"], "--json")
    assert json.loads(canceled.stdout)["state"] == "canceled", canceled.stderr
    assert a.cli_json("tasks", "get", record["id"])["state"] == "canceled"
    assert "gateway.rest.cancel_task" in operations_from_a(b)


def test_a_refusal_reads_as_the_same_error_as_over_json_rpc(
    nodes: Pair,
) -> None:
    a, _ = nodes
    refused = a.cli("delegate", "node-b", "anyone?", "--agent", "nobody")
    assert refused.returncode != 0
    # node-b answers 404 with google.rpc.Status, ErrorInfo reason UNKNOWN_AGENT: the CLI
    # reads it back as the JSON-RPC error it stands for
    assert "peer node-b refused: -32012" in refused.stderr, refused.stderr
    assert "(HTTP 404)" in refused.stderr


def test_a_task_followed_later_resubscribes_over_http_json(
    nodes: Pair,
) -> None:
    a, b = nodes
    record = delegated(a, "later", "--agent", "patient")
    assert record["state"] in ("submitted", "working"), record
    followed = a.cli("tasks", "follow", record["id"], "--json", "--timeout", "60")
    assert followed.returncode == 0, followed.stderr
    done = json.loads(followed.stdout)
    assert done["state"] == "completed" and len(artifact_texts(done["task"])) == 3
    assert "gateway.rest.subscribe_to_task" in operations_from_a(b)


def test_a_node_with_a_public_url_is_pushed_to_after_asking_over_http_json(
    tmp_path: Path,
) -> None:
    with linked_pair(tmp_path, REST, public=True) as pair:
        a, b = pair.a, pair.b
        record = delegated(a, "pushed", "--agent", "writer", "--wait")
        assert record["state"] == "completed" and record["binding"] == REST
        served = operations_from_a(b)
        assert "gateway.rest.create_task_push_notification_config" in served, served
        assert not [op for op in served if not op.startswith("gateway.rest.")], served


def test_a_dropped_stream_resumes_after_the_last_event_it_read(
    nodes: Pair,
) -> None:
    """Last-Event-ID on tasks/{id}:subscribe: the peer replays from the event after it."""
    a, b = nodes
    record = delegated(a, "resumed", "--agent", "patient")
    now = utc_now()
    peer = PeerRecord("node-b", b.url, "api_key", nodes.secret, now, now)
    client = A2AClient(peer, "node-a", lambda: 30.0,
                       dialect=PeerDialect("1.0", default_rest_url(b.url), REST))
    params = V1SubscribeToTaskParams(method=V1_SUBSCRIBE_TO_TASK, id=record["remote_task_id"])

    async def read(last: int | None, count: int | None) -> list[tuple[int | None, Any]]:
        read: list[tuple[int | None, Any]] = []
        async with contextlib.aclosing(stream_call(client, params, last)) as events:
            async for item in events:
                read.append(item)
                if count is not None and len(read) == count:
                    break
        return read

    first = asyncio.run(read(None, 2))
    last = first[-1][0]
    assert len(first) == 2 and last is not None
    rest = asyncio.run(read(last, None))  # to the end of the task
    seqs = [seq for seq, _ in rest]
    # nothing read again: every event is after the last one read, in the log's order
    assert seqs and all(seq is not None and seq > last for seq in seqs), (last, seqs)
    assert seqs == sorted(seqs)
    final = rest[-1][1]
    # read as 1.0's StreamResponse: the stream ends at the final status
    assert isinstance(final, V1StatusUpdatePayload)
    assert final.statusUpdate.status.state == "TASK_STATE_COMPLETED"
