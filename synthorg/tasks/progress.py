"""What a running (non-pure) executor reports, persisted as it comes.

Each report is one compare-and-set write over the task, so it also renews this process's
claim as the task's runner. A write that finds the task moved reads it again; when it has
become final meanwhile (canceled by another process or replica) the report raises
`Canceled`, so the agent stops at its next report even when the cancel came from elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable

from synthorg.errors import TaskNotFound, VersionConflict
from synthorg.generated.constants import TASK_STATE_WORKING, V1_ROLE_AGENT, V1_TERMINAL_STATES
from synthorg.generated.models import V1Artifact, V1Message, V1Task, V1TaskStatus, V1TextPart
from synthorg.store.tasks import StoredTask, TaskStore
from synthorg.tasks.executors import Canceled

MAX_WRITE_ATTEMPTS = 8
Change = Callable[[V1Task], V1Task]
EventLog = Callable[[V1Task | None, V1Task, bool], list[str]]


class StoredProgress:
    def __init__(
        self,
        store: TaskStore,
        peer: str,
        stored: StoredTask,
        now: Callable[[], str],
        new_id: Callable[[], str],
        log: EventLog,
        written: Callable[[str], None],
    ) -> None:
        self._store, self._peer, self._now, self._new_id = store, peer, now, new_id
        self._log = log  # the events each write logs with it
        self._written = written  # told the task id after every write (wakes its followers)
        self.latest = stored
        self.canceled = False

    async def begin(self) -> None:
        """Record the task as working, unless it already is."""
        if self.latest.task.status.state != TASK_STATE_WORKING:
            await self._write(lambda task: task)

    async def status(self, text: str) -> None:
        await self._write(lambda task: _with_status_text(task, text, self._now(), self._new_id()))

    async def artifact(
        self, artifact: V1Artifact, *, append: bool = False, last_chunk: bool = False
    ) -> None:
        await self._write(lambda task: _with_artifact(task, artifact, append), last_chunk)

    async def _write(self, change: Change, last_chunk: bool = False) -> None:
        if self.canceled:
            raise Canceled()
        for _ in range(MAX_WRITE_ATTEMPTS):
            before = self.latest.task
            task = change(before)
            if task.status.state != TASK_STATE_WORKING:
                task = task.model_copy(
                    update={"status": task.status.model_copy(update={"state": TASK_STATE_WORKING})}
                )
            try:
                self.latest = await self._store.update(
                    self._peer, task, self.latest.version,
                    events=self._log(before, task, last_chunk),
                )
            except VersionConflict:
                fresh = await self._store.get(self._peer, before.id)
                if fresh is None:
                    raise TaskNotFound() from None
                if fresh.task.status.state in V1_TERMINAL_STATES:
                    self.canceled = True
                    raise Canceled() from None
                self.latest = fresh
                continue
            self._written(task.id)
            return
        raise VersionConflict("the task kept changing while progress was being recorded")


def _with_status_text(task: V1Task, text: str, now: str, message_id: str) -> V1Task:
    message = V1Message(
        messageId=message_id,
        role=V1_ROLE_AGENT,
        parts=[V1TextPart(text=text)],
        taskId=task.id,
        contextId=task.contextId,
    )
    status = V1TaskStatus(state=TASK_STATE_WORKING, timestamp=now, message=message)
    return task.model_copy(update={"status": status})


def _with_artifact(task: V1Task, artifact: V1Artifact, append: bool) -> V1Task:
    artifacts = list(task.artifacts or [])
    for index, existing in enumerate(artifacts):
        if existing.artifactId == artifact.artifactId:
            if append:
                merged = existing.model_copy(
                    update={"parts": [*existing.parts, *artifact.parts]}
                )
            else:
                merged = artifact
            artifacts[index] = merged
            return task.model_copy(update={"artifacts": artifacts})
    return task.model_copy(update={"artifacts": [*artifacts, artifact]})
