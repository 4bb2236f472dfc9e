"""Task lifecycle for inbound calls: create, continue, read and cancel, per calling peer.

Ownership is enforced by the store (every read is keyed on the peer), so another peer's task
is indistinguishable from a missing one. `(peer, messageId)` is the idempotency key: a retry
returns the same task, a reuse with different content is refused. The key commits with what
it stands for: a new task with its first outcome, a follow-up with the message it appends.

Writes over an existing task compare versions (see `synthorg.store.tasks`), so follow-ups and
cancels of one task are serialised across processes; within one process a lock per task also
keeps them from racing at all.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, replace
from weakref import WeakValueDictionary

from synthorg.clock import new_id, utc_now
from synthorg.dialects.objects import as_json, message_from_v1, state_v03
from synthorg.errors import (
    DelegationLoop,
    InvalidParams,
    MessageIdConflict,
    TaskBusy,
    TaskNotCancelable,
    TaskNotFound,
    TaskTerminal,
    UnknownAgent,
    VersionConflict,
)
from synthorg.generated.constants import (
    MESSAGE_SEND,
    TASK_STATE_CANCELED,
    TASK_STATE_FAILED,
    TASK_STATE_SUBMITTED,
    TASK_STATE_WORKING,
    TASKS_CANCEL,
    TASKS_GET,
    TASKS_RESUBSCRIBE,
    V1_ROLE_AGENT,
    V1_ROLE_USER,
    V1_TERMINAL_STATES,
)
from synthorg.generated.models import (
    V1Message,
    V1MessagePayload,
    V1SendMessageParams,
    V1SendStreamingMessageParams,
    V1StreamResponse,
    V1Task,
    V1TaskPayload,
    V1TaskState,
    V1TaskStatus,
    V1TextPart,
)
from synthorg.observability.events import a2a as events
from synthorg.observability.log import emit
from synthorg.sequenced import Sequenced
from synthorg.store.task_codec import dumps, task_event
from synthorg.store.tasks import KeyRecorded, MessageKey, StoredTask, TaskStore, snapshot_seq
from synthorg.tasks import paging
from synthorg.tasks.events import STREAM_END_STATES, serialised, task_events
from synthorg.tasks.executors import Canceled, Detached, Executor, Outcome, Resumable
from synthorg.tasks.history import recent_history
from synthorg.tasks.hops import loop_refusal
from synthorg.tasks.progress import StoredProgress
from synthorg.tasks.query import TaskPage, TaskQuery
from synthorg.tasks.streams import TaskStreams

MAX_WRITE_ATTEMPTS = 8  # compare-and-set retries before a write gives up
# A blocking send answers when the task is final or waits for input, or after this long with
# the task still working (the caller follows it then), so a long agent never holds a call
# open past a client's timeout.
BLOCKING_WAIT_SECONDS = 5.0
BUSY_STATES = frozenset({TASK_STATE_SUBMITTED, TASK_STATE_WORKING})
SendParams = V1SendMessageParams | V1SendStreamingMessageParams  # its agent runs: no follow-up


now_iso = utc_now  # the node's clock (synthorg.clock)


def message_digest(message: V1Message) -> str:
    """The message's content hash: over its canonical JSON (members sorted, nulls left
    out), so a retry's layout, request id, binding or dialect does not change it."""
    return _digest(as_json(message))


def message_digest_v03(message: V1Message) -> str:
    """The digest of the message's 0.3 form: what a key recorded before the core spoke 1.0
    holds (see TaskService._replay)."""
    return _digest(as_json(message_from_v1(message)))


def _digest(document: object) -> str:
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _history_length(params: SendParams) -> int | None:
    return params.configuration.historyLength if params.configuration is not None else None


@dataclass(frozen=True)
class AgentRuntime:
    agent_id: str
    executor: Executor


class TaskService:
    def __init__(
        self,
        store: TaskStore,
        agents: Mapping[str, AgentRuntime],
        default_agent: str,
        max_message_parts: Callable[[], int],
        node_name: str | None = None,
        streams: TaskStreams | None = None,
        blocking_wait_seconds: float = BLOCKING_WAIT_SECONDS,
    ) -> None:
        self._blocking_wait = blocking_wait_seconds
        self._node_name = node_name
        self._streams = streams or TaskStreams(store)
        self._store = store
        self._agents = agents
        self._default_agent = default_agent
        self._max_parts = max_message_parts
        self._task_locks: WeakValueDictionary[str, asyncio.Lock] = WeakValueDictionary()
        # The agents' runs in this process, by task id: a cancel here cancels the run at once.
        self._running: dict[str, asyncio.Task[Outcome]] = {}
        self._jobs: set[asyncio.Task[V1Task]] = set()  # held so a detached run is not collected

    async def send(
        self, peer: str, params: SendParams, agent_id: str | None
    ) -> V1Task | V1Message:
        """The task the message created or continued, or the agent's direct reply."""
        # A2A's default is to answer when the task is final or interrupted;
        # returnImmediately answers as soon as the agent's work has started.
        config = params.configuration
        blocking = config is None or config.returnImmediately is not True
        answer = await self._send(peer, params.message, agent_id, blocking)
        if isinstance(answer, V1Message):
            return answer
        return recent_history(answer, _history_length(params))

    async def _send(
        self, peer: str, message: V1Message, agent_id: str | None, blocking: bool
    ) -> V1Task | V1Message:
        limit = self._max_parts()
        if len(message.parts) > limit:
            raise InvalidParams(
                f"Invalid params: the message has {len(message.parts)} parts; "
                f"at most {limit} are accepted",
                limit=limit,
            )
        if message.role != V1_ROLE_USER:
            raise InvalidParams('Invalid params: an inbound message has role "user"')
        refusal = loop_refusal(message, self._node_name)
        if refusal is not None:
            self._rejected(MESSAGE_SEND, peer, message.taskId or "", "delegation_loop")
            raise DelegationLoop(refusal)
        key = MessageKey(message.messageId, message_digest(message))
        if message.taskId is not None:
            async with self._lock(message.taskId):
                return await self._continue(peer, message, message.taskId, key, blocking)
        return await self._create(peer, message, key, self._agent(message, agent_id), blocking)

    async def get(self, peer: str, task_id: str, history_length: int | None) -> V1Task:
        return recent_history((await self._owned(peer, task_id, TASKS_GET)).task, history_length)

    async def cancel(self, peer: str, task_id: str) -> V1Task:
        async with self._lock(task_id):
            for _ in range(MAX_WRITE_ATTEMPTS):
                stored = await self._owned(peer, task_id, TASKS_CANCEL)
                if stored.task.status.state in V1_TERMINAL_STATES:
                    self._rejected(TASKS_CANCEL, peer, task_id, "not_cancelable")
                    raise TaskNotCancelable()
                await self._cancel_downstream(peer, stored.task)
                running = self._running.get(task_id)
                if running is not None:
                    running.cancel()  # the agent sees CancelledError at its next await
                try:
                    return await self._settle(peer, stored, Outcome(TASK_STATE_CANCELED))
                except VersionConflict:
                    continue  # written meanwhile by another process: look again
            raise VersionConflict("the task kept changing while it was being canceled")

    async def list(self, peer: str, query: TaskQuery) -> TaskPage:
        return await paging.page(self._store, peer, query)

    # -- streaming ------------------------------------------------------------------------

    async def stream(
        self, peer: str, params: SendParams, agent_id: str | None
    ) -> AsyncIterator[Sequenced[V1StreamResponse]]:
        """Send without blocking, then follow the task: a new task from its first event, a
        continued one from the task as it is once the message is recorded."""
        task = await self._send(peer, params.message, agent_id, blocking=False)
        if isinstance(task, V1Message):  # a direct reply: the one event, and no task to follow
            yield Sequenced(0, V1MessagePayload.model_construct(message=task))
            return
        after = 0 if params.message.taskId is None else None
        history_length = _history_length(params)
        async for event in self.resubscribe(peer, task.id, after):
            if isinstance(event.event, V1TaskPayload) and history_length is not None:
                # the stream's task as the send answers it (raw is the stored, whole task)
                cut = recent_history(event.event.task, history_length)
                event = replace(event, event=V1TaskPayload.model_construct(task=cut), raw=None)
            yield event

    async def resubscribe(
        self, peer: str, task_id: str, after: int | None
    ) -> AsyncIterator[Sequenced[V1StreamResponse]]:
        if after is None:  # the task as it is now, then what follows it
            stored = await self._owned(peer, task_id, TASKS_RESUBSCRIBE)
            last = snapshot_seq(stored.version)
            yield Sequenced(last, V1TaskPayload.model_construct(task=stored.task))
            if stored.task.status.state in STREAM_END_STATES:
                return
            after = last
        else:
            stored = await self._owned(peer, task_id, TASKS_RESUBSCRIBE)
            if not await self._store.events_after(peer, task_id, after, 1):
                # At (or past) the end of the log, which a follower whose stream dropped
                # asks for: answer now. A task that ends streams (final, or waiting for
                # input) is sent as it is, the last event; one still working gets
                # keep-alives until its next event, which an id past the end must not hide.
                # (Read after the task: a write between the two reads logged an event, so
                # the task read here is current.)
                head = snapshot_seq(stored.version)
                now = V1TaskPayload.model_construct(task=stored.task)
                if stored.task.status.state in STREAM_END_STATES:
                    yield Sequenced(head, now)
                    return
                after = min(after, head)
                yield Sequenced(after, now, quiet=True)
        async for event in self._streams.follow(peer, task_id, after):
            yield event

    def follow(
        self, peer: str, task_id: str, after: int
    ) -> AsyncIterator[Sequenced[V1StreamResponse]]:
        """The task's logged events after `after`, waiting for each, to the next that ends a
        stream. Unlike resubscribe it never answers at once with the task as it is: for a
        follower that has the task already and waits past its wait for input."""
        return self._streams.follow(peer, task_id, after)

    # -- creating -------------------------------------------------------------------------

    async def _create(
        self, peer: str, message: V1Message, key: MessageKey, agent: AgentRuntime, blocking: bool
    ) -> V1Task | V1Message:
        task_id = new_id()
        context_id = message.contextId or new_id()
        first = message.model_copy(update={"taskId": task_id, "contextId": context_id})
        if agent.executor.pure:
            # Run first, then commit the key, the task and its outcome together; a retry
            # finds the key taken and answers the task it recorded (a pure run is harmless).
            # The task is built working, as the agent sees it: never stored submitted.
            working = _new_task(task_id, context_id, first, agent, TASK_STATE_WORKING)
            outcome = await self._outcome(peer, agent, working, first)
            if outcome.direct:  # the agent answered and keeps no task: nothing is stored
                emit(events.TASK_DIRECT_REPLY, peer_name=peer, agent_id=agent.agent_id)
                return _reply(context_id, outcome)
            final = _settled(working, outcome)
            body, logged = _first_write(final)
            try:
                stored = await self._store.create(peer, key, final, logged, body=body)
            except KeyRecorded as race:  # a concurrent retry recorded the key first
                return await self._replay(peer, race.key, key, message)
            emit(events.TASK_CREATED, peer_name=peer, task_id=task_id, agent_id=agent.agent_id)
            self._state_changed(peer, stored.task)
            return stored.task
        # Created working, in one write: a stream still sees the task submitted, then its
        # status working (both events are logged with it), and the run's first report is
        # not a second write over the row just written.
        task = _new_task(task_id, context_id, first, agent, TASK_STATE_SUBMITTED)
        working = _working(task)
        logged = [task_event(dumps(task)), *serialised(task_events(task, working))]
        try:
            stored = await self._store.create(peer, key, working, logged)
        except KeyRecorded as race:
            return await self._replay(peer, race.key, key, message)
        emit(events.TASK_CREATED, peer_name=peer, task_id=task_id, agent_id=agent.agent_id)
        return await self._start(peer, stored, first, agent, blocking)

    # -- continuing -----------------------------------------------------------------------

    async def _continue(
        self, peer: str, message: V1Message, task_id: str, key: MessageKey, blocking: bool
    ) -> V1Task:
        for _ in range(MAX_WRITE_ATTEMPTS):
            recorded = await self._store.message_key(peer, message.messageId)
            if recorded is not None:
                return await self._replay(peer, recorded, key, message)
            stored = await self._owned(peer, task_id, MESSAGE_SEND)
            task = stored.task
            if task.status.state in V1_TERMINAL_STATES:
                self._rejected(MESSAGE_SEND, peer, task_id, "terminal")
                raise TaskTerminal()
            if task.status.state in BUSY_STATES:
                # A2A continues a task when it is interrupted (input-required, auth-required);
                # a second run of the agent beside the one working would race it.
                self._rejected(MESSAGE_SEND, peer, task_id, "busy")
                raise TaskBusy()
            if (message.contextId or task.contextId) != task.contextId:
                raise InvalidParams("Invalid params: contextId does not match the task")
            appended = message.model_copy(update={"contextId": task.contextId})
            with_message = _working(task, [*(task.history or []), appended])
            agent = self._runtime(task)
            try:
                if agent.executor.pure:
                    outcome = await self._outcome(peer, agent, with_message, appended)
                    settled = _settled(with_message, outcome)
                    stored = await self._store.update(
                        peer, settled, stored.version, key, _log(task, settled)
                    )
                    self._streams.notify(task_id)
                    self._state_changed(peer, stored.task)
                    return stored.task
                # The key and the message commit before the agent's work starts.
                stored = await self._store.update(
                    peer, with_message, stored.version, key, _log(task, with_message)
                )
                self._streams.notify(task_id)
            except KeyRecorded as race:
                return await self._replay(peer, race.key, key, message)
            except VersionConflict:
                continue  # another process wrote the task meanwhile: start again from it
            return await self._start(peer, stored, appended, agent, blocking)
        raise VersionConflict("the task kept changing while a follow-up was being recorded")

    # -- running --------------------------------------------------------------------------

    async def _start(
        self, peer: str, stored: StoredTask, message: V1Message, agent: AgentRuntime,
        blocking: bool,
    ) -> V1Task:
        """Run the agent in a task of its own, so the caller leaving does not stop it."""
        progress = StoredProgress(
            self._store, peer, stored, now_iso, new_id, _log, self._streams.notify
        )
        await progress.begin()
        job = asyncio.ensure_future(self._run(peer, progress, message, agent))
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)
        if not blocking:
            return progress.latest.task
        await asyncio.wait({job}, timeout=self._blocking_wait)
        if job.done():
            return job.result()
        return progress.latest.task  # still working: the run goes on

    async def _run(
        self, peer: str, progress: StoredProgress, message: V1Message | None,
        agent: AgentRuntime,
    ) -> V1Task:
        """The agent's run on `message`; with no message, its resumption (see `resume`)."""
        task_id = progress.latest.task.id
        executor, task = agent.executor, progress.latest.task
        if message is not None:
            work = executor.run(task, message, progress)
        elif isinstance(executor, Resumable):
            work = executor.resume(task, progress)
        else:
            raise TypeError(f"the agent of task {task_id} cannot resume")
        run = asyncio.ensure_future(work)
        self._running[task_id] = run
        try:
            await asyncio.wait({run})
        finally:
            self._running.pop(task_id, None)
            if not run.done():  # this coroutine itself was cancelled (the node is stopping)
                run.cancel()
        outcome = self._ended(peer, task_id, run)
        stored = progress.latest
        for _ in range(MAX_WRITE_ATTEMPTS):
            try:
                return await self._settle(peer, stored, outcome)
            except VersionConflict:
                stored = await self._owned(peer, task_id, MESSAGE_SEND)
                if stored.task.status.state in V1_TERMINAL_STATES:
                    return stored.task  # canceled meanwhile: final is final
        raise VersionConflict("the task kept changing while its outcome was being recorded")

    def _ended(self, peer: str, task_id: str, run: asyncio.Task[Outcome]) -> Outcome:
        if run.cancelled():
            return Outcome(TASK_STATE_CANCELED)
        exc = run.exception()
        if exc is None:
            return run.result()
        if isinstance(exc, Canceled):
            return Outcome(TASK_STATE_CANCELED)
        emit(
            events.TASK_EXECUTOR_FAILED,
            level="error",
            peer_name=peer,
            task_id=task_id,
            error=type(exc).__name__,
        )
        return Outcome(TASK_STATE_FAILED, message_text="the agent failed to run this task")

    async def _outcome(
        self, peer: str, agent: AgentRuntime, task: V1Task, message: V1Message
    ) -> Outcome:
        """A pure run: computed before anything is stored."""
        try:
            return await agent.executor.run(task, message, Detached())
        except Exception as exc:
            emit(
                events.TASK_EXECUTOR_FAILED,
                level="error",
                peer_name=peer,
                task_id=task.id,
                error=type(exc).__name__,
            )
            return Outcome(TASK_STATE_FAILED, message_text="the agent failed to run this task")

    async def _settle(self, peer: str, stored: StoredTask, outcome: Outcome) -> V1Task:
        settled = _settled(stored.task, outcome)
        updated = await self._store.update(
            peer, settled, stored.version, events=_log(stored.task, settled)
        )
        self._streams.notify(settled.id)
        self._state_changed(peer, updated.task)
        return updated.task

    async def _cancel_downstream(self, peer: str, task: V1Task) -> None:
        try:
            await self._runtime(task).executor.cancel(task)
        except Exception as exc:  # e.g. the downstream peer is down: cancel here regardless
            emit(
                events.TASK_EXECUTOR_FAILED,
                level="warning",
                peer_name=peer,
                task_id=task.id,
                reason="downstream_cancel_failed",
                error=type(exc).__name__,
            )

    # -- resuming -------------------------------------------------------------------------

    def resumable(self, task: V1Task) -> bool:
        """Whether the task's agent can go on with it after the process running it is gone."""
        return isinstance(self._runtime(task).executor, Resumable)

    async def resume(self, peer: str, stored: StoredTask) -> None:
        """Go on with a task taken over from a runner that is gone (see TaskStore.adopt)."""
        emit(events.TASK_RESUMED, peer_name=peer, task_id=stored.task.id)
        progress = StoredProgress(
            self._store, peer, stored, now_iso, new_id, _log, self._streams.notify
        )
        await progress.begin()
        job = asyncio.ensure_future(
            self._run(peer, progress, None, self._runtime(stored.task))
        )
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)

    # -- helpers --------------------------------------------------------------------------

    async def _replay(
        self, peer: str, recorded: MessageKey, sent: MessageKey, message: V1Message
    ) -> V1Task:
        # A key recorded before the core spoke 1.0 holds the digest of the 0.3 form: a retry
        # of that message is still the same message.
        if recorded.digest != sent.digest and recorded.digest != message_digest_v03(message):
            raise MessageIdConflict()
        return (await self._owned(peer, recorded.task_id, MESSAGE_SEND)).task

    def _lock(self, task_id: str) -> asyncio.Lock:
        lock = self._task_locks.get(task_id)
        if lock is None:
            lock = self._task_locks[task_id] = asyncio.Lock()
        return lock

    def _agent(self, message: V1Message, explicit: str | None) -> AgentRuntime:
        requested = explicit or (message.metadata or {}).get("agentId")
        agent_id = requested if isinstance(requested, str) else self._default_agent
        runtime = self._agents.get(agent_id)
        if runtime is None:
            raise UnknownAgent()
        return runtime

    def _runtime(self, task: V1Task) -> AgentRuntime:
        agent_id = (task.metadata or {}).get("agentId")
        runtime = self._agents.get(agent_id) if isinstance(agent_id, str) else None
        return runtime or self._agents[self._default_agent]

    async def _owned(self, peer: str, task_id: str, method: str) -> StoredTask:
        stored = await self._store.get(peer, task_id)
        if stored is None:
            self._rejected(method, peer, task_id, "not_found")
            raise TaskNotFound()
        return stored

    def _rejected(self, method: str, peer: str, task_id: str, reason: str) -> None:
        emit(
            events.TASK_METHOD_REJECTED,
            method=method,
            peer_name=peer,
            task_id=task_id,
            reason=reason,
        )

    def _state_changed(self, peer: str, task: V1Task) -> None:
        # The event names states as it always has (0.3's names): operators' queries match them.
        emit(events.TASK_STATE_CHANGED, peer_name=peer, task_id=task.id,
             state=state_v03(task.status.state))


def _log(before: V1Task | None, after: V1Task, last_chunk: bool = False) -> list[str]:
    """The events a write logs (see synthorg.tasks.events)."""
    return serialised(task_events(before, after, last_chunk))


def _new_task(
    task_id: str, context_id: str, first: V1Message, agent: AgentRuntime, state: V1TaskState
) -> V1Task:
    return V1Task(
        id=task_id,
        contextId=context_id,
        status=V1TaskStatus(state=state, timestamp=now_iso()),
        history=[first],
        artifacts=[],
        metadata={"agentId": agent.agent_id},
    )


def _first_write(task: V1Task) -> tuple[str, list[str]]:
    """A new task's stored JSON and the events its write logs, the task converted once: a
    new task's first event is the task itself (see synthorg.tasks.events)."""
    body = dumps(task)
    return body, [task_event(body), *serialised(task_events(None, task)[1:])]


def _working(task: V1Task, history: list[V1Message] | None = None) -> V1Task:
    """The task working from now; with `history`, holding it instead (one copy)."""
    update: dict[str, object] = {
        "status": V1TaskStatus(state=TASK_STATE_WORKING, timestamp=now_iso())
    }
    if history is not None:
        update["history"] = history
    return task.model_copy(update=update)


def _reply(context_id: str, outcome: Outcome) -> V1Message:
    """An agent's direct reply: a Message in the caller's context, of no task."""
    return V1Message(
        messageId=new_id(),
        role=V1_ROLE_AGENT,
        parts=[V1TextPart(text=outcome.message_text or "")],
        contextId=context_id,
    )


def _settled(task: V1Task, outcome: Outcome) -> V1Task:
    now = now_iso()
    history = list(task.history or [])
    if outcome.message_text is None:
        status = V1TaskStatus(state=outcome.state, timestamp=now)
    else:
        agent_message = V1Message(
            messageId=new_id(),
            role=V1_ROLE_AGENT,
            parts=[V1TextPart(text=outcome.message_text)],
            taskId=task.id,
            contextId=task.contextId,
        )
        status = V1TaskStatus(state=outcome.state, timestamp=now, message=agent_message)
        history.append(agent_message)
    return task.model_copy(
        update={
            "status": status,
            "history": history,
            "artifacts": [*(task.artifacts or []), *outcome.artifacts],
        }
    )
