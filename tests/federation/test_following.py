"""Onward delegation follows a slow downstream agent: B forwards to C's example agent, which
works for a while and writes its answer in chunks; B's own task relays C's progress and
chunks as they come (so a stream on B shows them) and ends when C's task does.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.helpers import cancel_task, expect_result
from tests.integration.live import LiveNode
from tests.integration.test_streams_live import events_of, open_stream, stream_message
from tests.support.node import cli

CALLER, CALLER_KEY = "caller", "caller-link-secret-5f1d9b3e"


def config(name: str, allowed: list[str], agent: str) -> str:
    return (
        f"a2a:\n  enabled: true\n  node_name: {name}\n  allowed_peers: [{', '.join(allowed)}]\n"
        f"agents:\n{agent}"
    )


FORWARDER = "  - {id: fwd, name: Forwarder, executor: {kind: peer, peer: c, agent: writer}}\n"
WRITER = (
    "  - id: %s\n    name: Writer\n    executor:\n      kind: python\n"
    "      entrypoint: examples.slow_writer:factory\n      options: {seconds: %s, chunks: %d}\n"
)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveNode, LiveNode]]:
    root: Path = tmp_path_factory.mktemp("following")
    c = LiveNode(root / "c", config("c", ["b"], WRITER % ("writer", 0.6, 3)
                                     + WRITER % ("slowpoke", 60, 60)))
    b = LiveNode(root / "b", config("b", [CALLER], FORWARDER
                                     + FORWARDER.replace("fwd", "fwd-slow").replace(
                                         "agent: writer", "agent: slowpoke")))
    with c, b:
        secret = secrets.token_urlsafe(24)
        cli(b.data_dir, "peers", "add", "c", "--endpoint", c.url, stdin=secret)
        cli(c.data_dir, "peers", "add", "b", "--endpoint", b.url, stdin=secret)
        cli(b.data_dir, "peers", "add", CALLER, "--endpoint", "http://127.0.0.1:9",
            stdin=CALLER_KEY)
        yield b, c


def test_a_forwarded_task_relays_the_downstream_chunks_and_ends_with_it(
    nodes: tuple[LiveNode, LiveNode],
) -> None:
    b, _ = nodes
    with b.client(CALLER, CALLER_KEY) as client, open_stream(
        client, "message/stream", stream_message("fwd", "relay")
    ) as response:
        events = list(events_of(response))
    chunks = [
        part["text"]
        for e in events if e.result["kind"] == "artifact-update"
        for part in e.result["artifact"]["parts"]
    ]
    assert chunks == [f"[{n}] relay\n" for n in range(1, 4)]
    assert events[-1].result["status"]["state"] == "completed"
    assert events[-1].result["final"] is True


def test_a_cancel_on_b_reaches_the_slow_agent_on_c(nodes: tuple[LiveNode, LiveNode]) -> None:
    b, _ = nodes
    with b.client(CALLER, CALLER_KEY) as client:
        with open_stream(client, "message/stream", stream_message("fwd-slow", "x")) as response:
            seen = events_of(response)
            first = next(seen)
            while (event := next(seen, None)) is None or event.result["kind"] != "artifact-update":
                assert event is not None, "the stream ended before C's first chunk"
                assert not event.result.get("final"), event.result
            canceled = expect_result(cancel_task(client, first.result["id"]))
            rest = list(seen)
        assert canceled["status"]["state"] == "canceled"
        assert rest[-1].result["status"]["state"] == "canceled"
