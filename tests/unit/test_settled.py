"""Settled models: their JSON is made once and is the serializer's; only settled objects are
kept, and each only while it lives; the task stores settle what their read cache hands out,
and the 0.3 edge the Task it made for a settled 1.0 task, nothing else."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

from synthorg import settled
from synthorg.dialects.objects import task_v03
from synthorg.gateway.replies import encoded
from synthorg.generated.models import V1Task
from synthorg.store.sqlite.database import open_database
from synthorg.store.sqlite.tasks import SqliteTaskStore
from synthorg.store.tasks import MessageKey


def make_task(task_id: str = "t-1") -> V1Task:
    return V1Task.model_validate({
        "id": task_id,
        "contextId": "ctx-1",
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2025-01-01T00:00:00.000Z"},
        "history": [{"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": "héllo ✓"}],
                     "taskId": task_id, "contextId": "ctx-1"}],
    })


def serialised(task: V1Task) -> bytes:
    return task.__pydantic_serializer__.to_json(task, by_alias=True, exclude_none=True)


def test_a_settled_models_json_is_made_once_and_is_the_serializers() -> None:
    task = settled.settle(make_task())
    first = encoded(task)
    assert first == serialised(task)
    assert encoded(task) is first
    assert settled.settle(task) is task and encoded(task) is first  # settling again keeps it


def test_a_model_not_settled_is_serialised_each_time_and_not_kept() -> None:
    task = make_task()
    before = len(settled._SETTLED)
    assert encoded(task) == serialised(task)
    assert encoded(task) is not encoded(task)
    assert not settled.is_settled(task) and len(settled._SETTLED) == before


def test_an_entry_goes_with_its_object() -> None:
    task = settled.settle(make_task())
    encoded(task)
    key = id(task)
    assert key in settled._SETTLED
    del task
    gc.collect()
    assert key not in settled._SETTLED


def test_the_store_settles_what_its_reads_hand_out_and_the_edge_what_it_made_of_them(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        store = SqliteTaskStore(open_database(tmp_path))
        written = await store.create("peer-a", MessageKey("m-1", "d", "t-1"), make_task())
        assert not settled.is_settled(written.task)  # a write's task is answered once
        assert not settled.is_settled(task_v03(written.task))
        read = await store.get("peer-a", "t-1")
        assert read is not None and settled.is_settled(read.task)
        assert settled.is_settled(task_v03(read.task))
        assert encoded(task_v03(read.task)) is encoded(task_v03(read.task))

    asyncio.run(scenario())
