"""Task streams followed across event loops, on a real SQLite store.

A follower learns of another process's writes only from the shared poll timer. That timer
lives on an event loop and is there for the followers: once the last one leaves it goes, and
a follower on a later loop (an older loop closed meanwhile) starts its own.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from synthorg.generated.constants import TASK_STATE_COMPLETED, TASK_STATE_WORKING
from synthorg.generated.models import V1Message, V1Task, V1TaskStatus, V1TextPart
from synthorg.store.backend import Stores
from synthorg.store.select import open_stores
from synthorg.store.tasks import MessageKey, StoredTask, snapshot_seq
from synthorg.tasks.events import ends_stream, serialised, task_events
from synthorg.tasks.streams import TaskStreams

PEER = "peer-a"
POLL = 0.05
WAIT = 10.0


def working_task(task_id: str) -> V1Task:
    message = V1Message(messageId=f"m-{task_id}", role="ROLE_USER",
                        parts=[V1TextPart(text="go")], taskId=task_id, contextId="c")
    return V1Task(id=task_id, contextId="c", status=V1TaskStatus(state=TASK_STATE_WORKING),
                  history=[message], artifacts=[])


async def written_elsewhere(stores: Stores, task_id: str) -> StoredTask:
    task = working_task(task_id)
    return await stores.tasks.create(
        PEER, MessageKey(f"m-{task_id}", "digest"), task, serialised(task_events(None, task))
    )


async def completed_elsewhere(stores: Stores, stored: StoredTask) -> None:
    done = stored.task.model_copy(update={"status": V1TaskStatus(state=TASK_STATE_COMPLETED)})
    await stores.tasks.update(PEER, done, stored.version,
                              events=serialised(task_events(stored.task, done)))


@pytest.fixture
def two_processes(tmp_path: Path) -> Iterator[tuple[Stores, Stores]]:
    """Two handles on one data dir: the follower's, and another process's (whose writes the
    follower's streams are never told of)."""
    here, there = open_stores(tmp_path), open_stores(tmp_path)
    yield here, there
    here.close()
    there.close()


def test_a_follower_on_a_later_event_loop_is_polled_after_the_older_ones_left(
    two_processes: tuple[Stores, Stores],
) -> None:
    here, there = two_processes
    streams = TaskStreams(here.tasks, poll_seconds=POLL)

    async def follow_to_the_end(task_id: str) -> str:
        stored = await written_elsewhere(there, task_id)
        following = streams.follow(PEER, task_id, snapshot_seq(stored.version))
        # Written once the follower waits: only a poll of the log can show it.
        waiting = asyncio.ensure_future(anext(following))
        await asyncio.sleep(0)
        await completed_elsewhere(there, stored)
        event = (await asyncio.wait_for(waiting, WAIT)).event
        await following.aclose()
        assert ends_stream(event)
        return task_id

    async def leave_early(task_id: str) -> None:
        stored = await written_elsewhere(there, task_id)
        following = streams.follow(PEER, task_id, snapshot_seq(stored.version))
        waiting = asyncio.ensure_future(anext(following))
        await asyncio.sleep(0)  # the follower waits, the poll timer set
        waiting.cancel()  # ... and leaves; its loop ends soon after
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        await following.aclose()

    asyncio.run(follow_to_the_end("t-first"))
    asyncio.run(leave_early("t-left"))
    # Each on a fresh event loop, the older loops closed.
    assert asyncio.run(follow_to_the_end("t-later")) == "t-later"
    assert asyncio.run(follow_to_the_end("t-latest")) == "t-latest"
