"""Onward delegation: an agent of this node forwards its tasks to a catalog peer (A -> B -> C).

Each forwarded message carries this node's name in `metadata["synthorg.visited"]` (see
`synthorg.tasks.hops`), so a loop ends with a clear error on its first hop back. The message
sent onward has a `messageId` derived from the task and the message it forwards, so doing
the same forwarding twice (a retry, a race between workers) lands on the same downstream
task instead of creating another.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid

from synthorg.delegation.delegator import (
    PUSHED_POLL,
    PUSHED_READ,
    DelegationError,
    Delegator,
    push_url,
)
from synthorg.delegation.errors import PeerError, PeerMisconfigured, PeerRpcError
from synthorg.delegation.following import StreamGaveUp, follow_stream
from synthorg.delegation.sse_client import Events
from synthorg.generated.constants import (
    TASK_NOT_CANCELABLE,
    TASK_STATE_AUTH_REQUIRED,
    TASK_STATE_FAILED,
    TASK_STATE_INPUT_REQUIRED,
    V1_ROLE_USER,
    V1_TERMINAL_STATES,
)
from synthorg.generated.models import V1Artifact, V1Message, V1Task, V1TextPart
from synthorg.store.delegations import Delegation
from synthorg.tasks.executors import Outcome, Progress
from synthorg.tasks.hops import VISITED_KEY, visited_nodes

FIRST_POLL, MAX_POLL = 0.2, 5.0  # seconds between polls of a downstream task that works
MAX_POLL_FAILURES = 30  # consecutive failed polls before the task is failed here
# A downstream task in one of these takes a follow-up; in any other it has had ours already.
WAITING_STATES = frozenset({TASK_STATE_INPUT_REQUIRED, TASK_STATE_AUTH_REQUIRED})
# A downstream task in one of these is followed no further: it ended, or waits for input.
STREAM_END_STATES = V1_TERMINAL_STATES | WAITING_STATES
_FORWARDED = uuid.UUID("9c1f3a52-7d4e-4b8a-a6f0-2e5d8c7b1a90")  # namespace of onward ids


def forwarded_message_id(task_id: str, message_id: str) -> str:
    return str(uuid.uuid5(_FORWARDED, f"{task_id}\n{message_id}"))


def _status_text(task: V1Task) -> str | None:
    message = task.status.message
    if message is None:
        return None
    texts = [part.text for part in message.parts if isinstance(part, V1TextPart)]
    return "\n".join(texts) or None


class PeerExecutor:
    """Forwards a task to a peer: the core's objects and the delegation's are both A2A 1.0's,
    handed across as they come."""

    pure = False  # it calls a peer

    def __init__(
        self,
        delegator: Delegator,
        node_name: str | None,
        peer: str,
        agent_id: str | None,
        public_url: str | None = None,
    ) -> None:
        self._delegator = delegator
        self._node_name = node_name
        self._peer = peer
        self._agent_id = agent_id
        self._push_url = push_url(public_url, peer)  # None: no public url to push to

    async def run(self, task: V1Task, message: V1Message, progress: Progress) -> Outcome:
        metadata = {VISITED_KEY: [*visited_nodes(message), self._node_name or "?"]}
        parts = message.parts
        onward_id = forwarded_message_id(task.id, message.messageId)
        try:
            existing = await self._delegator.store.by_origin(task.id)
            if existing is None and self._push_url is None and await self._streams():
                # Followed by stream from the start: message/stream, read on after the Task.
                opened = None
                with contextlib.suppress(PeerError):  # else sent below (same messageId)
                    opened = await self._delegator.delegate_streaming(
                        self._peer, parts, agent_id=self._agent_id, metadata=metadata,
                        origin_task_id=task.id, message_id=onward_id,
                    )
                if opened is not None:
                    return await self._follow_stream(task, *opened, progress=progress)
            if existing is None:
                record = await self._delegator.delegate(
                    self._peer,
                    parts,
                    agent_id=self._agent_id,
                    metadata=metadata,
                    origin_task_id=task.id,
                    message_id=onward_id,
                    blocking=False,  # answered once started; followed below
                )
            else:
                record = await self._delegator.send_followup(
                    existing, parts, metadata, message_id=onward_id, blocking=False
                )
        except PeerRpcError as exc:
            refused = f"peer {self._peer} refused: {exc.message}"
            return Outcome(TASK_STATE_FAILED, message_text=refused)
        except (PeerError, DelegationError) as exc:
            return Outcome(TASK_STATE_FAILED, message_text=f"peer {self._peer} failed: {exc}")
        return await self._follow_record(task, record, progress)

    async def resume(self, task: V1Task, progress: Progress) -> Outcome:
        """Go on with a task a process that is gone forwarded: follow the downstream task its
        delegation record names, or forward it now if the record was never written (the
        onward messageId is fixed, so a forwarding that did reach the peer is not repeated).
        A follow-up stored here that the downstream task does not hold (the process died
        between storing and forwarding it) is forwarded first."""
        record = await self._delegator.store.by_origin(task.id)
        if record is None:
            first = next((m for m in task.history or [] if m.role == V1_ROLE_USER), None)
            if first is None:
                return Outcome(TASK_STATE_FAILED, message_text="nothing to forward")
            return await self.run(task, first, progress)
        # The downstream task as it is now, if the peer answers (else followed below, with
        # retries).
        with contextlib.suppress(PeerError, DelegationError):
            record = await self._delegator.refresh(record.id)
        unsent = _unforwarded(task, record)
        if unsent is not None:
            return await self.run(task, unsent, progress)
        return await self._follow_record(task, record, progress)

    async def _follow_record(self, task: V1Task, record: Delegation, progress: Progress) -> Outcome:
        """Follow by push when this node has a public url and the peer agrees, else by stream
        when the peer's card says it streams, else by polling."""
        relayed = {a.artifactId: len(a.parts) for a in task.artifacts or []}
        if record.state in STREAM_END_STATES:
            return await self._follow(record, relayed, progress)
        if self._push_url and await self._delegator.request_pushes(record, self._push_url):
            return await self._follow(record, relayed, progress, pushed=True)
        if await self._streams():
            return await self._follow_stream(task, record, progress=progress)
        return await self._follow(record, relayed, progress)

    async def _streams(self) -> bool:
        try:
            return await self._delegator.streams(self._peer)
        except (PeerError, DelegationError):
            return False

    async def _follow_stream(
        self, task: V1Task, record: Delegation, events: Events | None = None,
        last: int | None = None, *, progress: Progress,
    ) -> Outcome:
        """By stream, then (to end, or when the stream is refused or the peer stays away
        too long) as polling does."""
        relayed = {a.artifactId: len(a.parts) for a in task.artifacts or []}
        relay = _Relay(relayed, progress)
        try:
            await relay.record(record)  # what the record already holds (a resumed task's)
        except BaseException:
            if events is not None:  # not handed on: closed here
                await events.aclose()
            raise
        with contextlib.suppress(StreamGaveUp):
            record = await follow_stream(
                self._delegator, record, STREAM_END_STATES, relay.record,
                events=events, last=last,
            )
        return await self._follow(record, relayed, progress)

    async def _follow(
        self, record: Delegation, relayed: dict[str, int], progress: Progress,
        pushed: bool = False,
    ) -> Outcome:
        """Poll the downstream task with backoff while it works, relaying its artifacts (and
        the parts added to them) and its progress, until it ends or waits for input. A cancel
        of ours stops the wait at once. When the peer pushes to us (`pushed`), the local
        record, which each verified push updates, is read instead, and the peer polled only
        every PUSHED_POLL seconds."""
        delay, failures = FIRST_POLL, 0
        relay = _Relay(relayed, progress)
        last_poll = time.monotonic()
        while True:
            await relay.record(record)
            if record.state in STREAM_END_STATES:
                return Outcome(record.task.status.state,
                               message_text=_status_text(record.task))
            await asyncio.sleep(delay)
            delay = min(delay * 2, PUSHED_READ if pushed else MAX_POLL)
            if pushed and time.monotonic() - last_poll < PUSHED_POLL:
                local = await self._delegator.store.get(record.id)
                if local is not None:
                    record = local
                continue
            last_poll = time.monotonic()
            try:
                record = await self._delegator.refresh(record.id)
                failures = 0
            except PeerMisconfigured as exc:  # the record must change first: no retry
                return Outcome(TASK_STATE_FAILED, message_text=f"peer {self._peer} failed: {exc}")
            except PeerError as exc:  # the peer may be restarting: keep following, bounded
                failures += 1
                if failures >= MAX_POLL_FAILURES:
                    return Outcome(
                        TASK_STATE_FAILED, message_text=f"peer {self._peer} unreachable: {exc}"
                    )

    async def cancel(self, task: V1Task) -> None:
        record = await self._delegator.store.by_origin(task.id)
        if record is None:
            return
        try:
            await self._delegator.cancel(record.id)
        except PeerRpcError as exc:
            if exc.code != TASK_NOT_CANCELABLE.code:
                raise




def _unforwarded(task: V1Task, record: Delegation) -> V1Message | None:
    """The task's last message from its caller, when it is a follow-up the downstream task
    does not hold: that task waits for input and has no message under the follow-up's onward
    id. (Had it been forwarded, the downstream task would hold it, or have moved on.)"""
    last = next((m for m in reversed(task.history or []) if m.role == V1_ROLE_USER), None)
    if last is None:
        return None
    onward = forwarded_message_id(task.id, last.messageId)
    if onward == record.message_id or record.state not in WAITING_STATES:
        return None
    held = {m.messageId for m in record.task.history or []}
    return None if onward in held else last


class _Relay:
    """Reports what is new of a downstream task as this task's progress: its artifacts (the
    parts added since the last look) and its status message, once each."""

    def __init__(self, relayed: dict[str, int], progress: Progress) -> None:
        self._relayed, self._progress = relayed, progress
        self._said: str | None = None

    async def record(self, record: Delegation) -> None:
        remote = record.task
        for artifact in remote.artifacts or []:
            await _relay(artifact, self._relayed, self._progress)
        text = _status_text(remote)
        if remote.status.state in STREAM_END_STATES:
            return  # the outcome carries the last message
        if text is not None and text != self._said:
            await self._progress.status(text)
            self._said = text


async def _relay(artifact: V1Artifact, relayed: dict[str, int], progress: Progress) -> None:
    """Report what is new of a downstream artifact: all of it, or the parts added since."""
    done = relayed.get(artifact.artifactId)
    if done is None:
        await progress.artifact(artifact)
    elif len(artifact.parts) > done:
        grown = artifact.model_copy(update={"parts": artifact.parts[done:]})
        await progress.artifact(grown, append=True)
    else:
        return
    relayed[artifact.artifactId] = len(artifact.parts)
