"""Stream fan-out in process, without sockets or clients: N SSE streams follow one task of a
real SQLite store, and each logged event is timed from its write to its frame being handed to
the last stream's `send`. This is the node's own share of an event's delay at N streams;
`bench.streams` measures the same over HTTP, where the clients' share is mixed in.

    .venv/bin/python -m bench.stream_fanout [--streams N] [--events K]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from synthorg.gateway.sse import EventStream
from synthorg.generated.constants import (
    TASK_STATE_COMPLETED,
    TASK_STATE_SUBMITTED,
    TASK_STATE_WORKING,
)
from synthorg.generated.models import V1Task
from synthorg.store.sqlite.database import open_database
from synthorg.store.sqlite.tasks import SqliteTaskStore
from synthorg.store.tasks import MessageKey
from synthorg.tasks.streams import TaskStreams

PEER, TASK = "bench-peer", "t-1"


def task(state: str) -> V1Task:
    return V1Task.model_validate({
        "id": TASK, "contextId": "c", "history": [], "artifacts": [],
        "status": {"state": state, "timestamp": "2030-01-01T00:00:00.000Z"},
    })


def status_event(state: str) -> str:
    """A 1.0 statusUpdate, as the log keeps events."""
    return json.dumps({"statusUpdate": {
        "taskId": TASK, "contextId": "c",
        "status": {"state": state, "timestamp": "2030-01-01T00:00:00.000Z"},
    }})


async def never_disconnect() -> dict[str, Any]:
    await asyncio.Event().wait()
    return {}


async def measure(data_dir: Path, streams: int, events: int) -> list[float]:
    db = open_database(data_dir)
    try:
        store = SqliteTaskStore(db)
        follow = TaskStreams(store)
        stored = await store.create(PEER, MessageKey("m-1", "d-1"), task(TASK_STATE_SUBMITTED),
                                    [status_event(TASK_STATE_SUBMITTED)])
        arrivals: dict[int, int] = {}
        delivered = asyncio.Event()
        expected = [0]

        async def send(message: MutableMapping[str, Any]) -> None:
            body = message.get("body", b"")
            if body.startswith(b"id: "):
                seq = int(body[4:body.index(b"\n")])
                arrivals[seq] = arrivals.get(seq, 0) + 1
                if seq == expected[0] and arrivals[seq] == streams:
                    delivered.set()

        responding = [
            asyncio.ensure_future(
                EventStream(1, b": open\n\n", follow.follow(PEER, TASK, 0), PEER)
                .respond(send, never_disconnect)
            )
            for _ in range(streams)
        ]
        while sum(arrivals.values()) < streams:  # every stream has replayed the first event
            await asyncio.sleep(0)
        delays: list[float] = []
        version = stored.version
        for n in range(events):
            final = n == events - 1
            state = TASK_STATE_COMPLETED if final else TASK_STATE_WORKING
            delivered.clear()
            started = time.perf_counter()
            stored = await store.update(PEER, task(state), version,
                                        events=[status_event(state)])
            version = stored.version
            logged = await store.events_after(PEER, TASK, 0, 1000)
            expected[0] = logged[-1].seq
            if arrivals.get(expected[0], 0) == streams:  # a poll tick during the write
                delivered.set()
            follow.notify(TASK)
            await delivered.wait()
            delays.append(1000 * (time.perf_counter() - started))
        await asyncio.wait_for(asyncio.gather(*responding), 60)
        return delays
    finally:
        db.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stream_fanout")
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--events", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        delays = sorted(asyncio.run(measure(Path(tmp), args.streams, args.events)))
    print(f"streams {args.streams}, events {len(delays)}: write to last stream's frame, "
          f"median {statistics.median(delays):.1f} ms, max {delays[-1]:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
