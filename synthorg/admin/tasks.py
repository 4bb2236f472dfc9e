"""The operator's view of this node's tasks (the admin API's task operations).

Inbound tasks are kept per owning peer, so a list reads each known peer's newest tasks (the
catalog's peers and the allowlisted ones) and merges them; outbound tasks are the delegation
records. Paging is by offset over at most `MAX_SCANNED` tasks each way: an operator's view,
not a peer's. A cancel runs through the task service, by the same rules as a peer's
tasks/cancel; following a task is the service's resubscribe.

The admin API's documents are 0.3's (AdminTaskDetail.task is a 0.3 Task, filters and
summaries name 0.3's states, the task's events are 0.3 stream events): the service's 1.0
objects are converted here, at the admin edge.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from synthorg import errors
from synthorg.admin.activity import delegation_summary, task_summary
from synthorg.admin.task_query import TaskListQuery
from synthorg.dialects.objects import state_v03, state_v1, stream_item_v03, task_v03
from synthorg.generated.constants import (
    TASK_DIRECTION_OUTBOUND,
    TERMINAL_STATES,
    V1_TERMINAL_STATES,
)
from synthorg.generated.models import StreamEvent, V1Task
from synthorg.sequenced import Sequenced
from synthorg.store.delegations import DelegationStore
from synthorg.store.tasks import TaskFilter, TaskStore
from synthorg.tasks.service import TaskService

MAX_SCANNED = 10_000

class AdminTasks:
    def __init__(self, service: TaskService, store: TaskStore, delegations: DelegationStore,
                 peer_names: Callable[[], Iterable[str]]) -> None:
        self._service = service
        self._store = store
        self._delegations = delegations
        self._peer_names = peer_names

    async def list(self, query: TaskListQuery) -> dict[str, Any]:
        wanted = query.offset + query.page_size + 1  # one more: is there a next page?
        if wanted > MAX_SCANNED:
            raise errors.InvalidValue(f"pageToken reads past the newest {MAX_SCANNED} tasks",
                                      key="pageToken")
        tasks: list[dict[str, Any]] = []
        delegations: list[dict[str, Any]] = []
        if query.direction == TASK_DIRECTION_OUTBOUND:
            rows = [delegation_summary(d) for d in await self._delegations.recent(MAX_SCANNED)
                    if (query.peer is None or d.peer == query.peer)
                    and (query.state is None or state_v03(d.state) == query.state)
                    and (query.since is None or d.updated_at >= query.since)]
            delegations = rows[query.offset:wanted]
            found = len(delegations)
        else:
            state = None if query.state is None else state_v1(query.state)
            where = TaskFilter(state=state, updated_since=query.since)
            peers = [query.peer] if query.peer is not None else sorted(set(self._peer_names()))
            merged: list[dict[str, Any]] = []
            for peer in peers:
                page = await self._store.page(peer, where, None, MAX_SCANNED if query.agent
                                              else wanted)
                merged.extend(task_summary(peer, task) for _, task in page.rows)
            if query.agent is not None:
                merged = [row for row in merged if row["agent"] == query.agent]
            merged.sort(key=lambda row: row["updatedAt"] or "", reverse=True)
            tasks = merged[query.offset:wanted]
            found = len(tasks)
        more = found > query.page_size
        return {
            "direction": query.direction,
            "tasks": tasks[:query.page_size],
            "delegations": delegations[:query.page_size],
            "nextPageToken": str(query.offset + query.page_size) if more else "",
        }

    async def locate(self, task_id: str, peer: str | None) -> tuple[str, V1Task]:
        """The task and the peer that owns it; UnknownTask when no known peer has it."""
        for name in [peer] if peer is not None else sorted(set(self._peer_names())):
            stored = await self._store.get(name, task_id)
            if stored is not None:
                return name, stored.task
        raise errors.UnknownTask("No such task of this node's peers")

    async def detail(self, task_id: str, peer: str | None) -> dict[str, Any]:
        owner, task = await self.locate(task_id, peer)
        onward = await self._delegations.by_origin(task.id)
        return {
            "peer": owner,
            "task": task_v03(task).model_dump(mode="json", exclude_none=True),
            "onward": None if onward is None else delegation_summary(onward),
            "cancelable": task.status.state not in V1_TERMINAL_STATES,
        }

    async def cancel(self, task_id: str, peer: str | None) -> dict[str, Any]:
        owner, _ = await self.locate(task_id, peer)
        try:
            task = await self._service.cancel(owner, task_id)
        except errors.TaskNotCancelable:
            raise errors.NotCancelable(
                "The task is in a final state and cannot be canceled") from None
        except errors.TaskNotFound:
            raise errors.UnknownTask("No such task of this node's peers") from None
        return task_v03(task).model_dump(mode="json", exclude_none=True)

    async def follow(self, task_id: str, peer: str | None
                     ) -> AsyncIterator[Sequenced[StreamEvent]]:
        """The task now, then each event to its final one (UnknownTask before the first)."""
        owner, _ = await self.locate(task_id, peer)
        return self._to_the_end(owner, task_id)

    async def _to_the_end(self, owner: str, task_id: str
                          ) -> AsyncIterator[Sequenced[StreamEvent]]:
        """A peer's stream ends when the task waits for input; the operator's goes on, past
        each wait, to the task's final state. Past a wait it follows the log from the last
        event seen (a resubscribe there would answer at once with the same task again, and
        this loop would spin without ever waiting)."""
        after: int | None = None
        while True:
            state = None
            events = (self._service.resubscribe(owner, task_id, None) if after is None
                      else self._service.follow(owner, task_id, after))
            async for seen in events:
                if seen.quiet:
                    continue
                after = seen.seq
                item = stream_item_v03(seen)
                status = getattr(item.event, "status", None)
                state = status.state if status is not None else state
                yield item
            if state in TERMINAL_STATES:
                return

