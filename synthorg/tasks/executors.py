"""The agent interface: an executor runs an agent's side of a task and says what happened.

An executor is async. While it works it may report through its `Progress`: a status message
(the task stays working), an artifact or a chunk of one. When it returns, its `Outcome`
says the next state (TASK_STATE_COMPLETED, TASK_STATE_FAILED, or TASK_STATE_INPUT_REQUIRED
to ask for input), perhaps
an agent message and the artifacts not reported yet. A pure executor may instead answer a
new message directly (`Outcome.reply`): the caller gets the agent's Message and no task is
stored; elsewhere (a follow-up, an executor with effects, whose task is already stored) a
direct reply settles the task as completed with that message. A cancel reaches it promptly: the
coroutine running it is cancelled (asyncio.CancelledError at its next await) when the cancel
arrives in this process, and a report raises `Canceled` when the task was canceled elsewhere;
`progress.canceled` answers for agents that would rather look.

Executors are chosen per agent in the company YAML (`executor.kind`: echo, park, peer, or
python for an operator's own, see `synthorg.tasks.plugins`). They see the task and the
message as the generated A2A 1.0 models (V1Task, V1Message; artifacts are V1Artifact, states
the 1.0 names, TASK_STATE_WORKING) whichever dialect the caller spoke, and never touch the
store: the task service persists what
they report and return. A `pure` executor only computes, with no effect outside the task, so
its outcome can be committed together with the task and the message that led to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from synthorg.clock import new_id
from synthorg.dialects.objects import state_v03
from synthorg.generated.constants import (
    TASK_STATE_COMPLETED,
    TASK_STATE_INPUT_REQUIRED,
    TASK_STATE_REJECTED,
)
from synthorg.generated.models import V1Artifact, V1Message, V1Task, V1TaskState, V1TextPart


class Canceled(Exception):
    """Raised by a report when the task was canceled meanwhile; the executor should stop."""


@dataclass(frozen=True)
class Outcome:
    """What an executor decided: the new state, an optional agent message, new artifacts."""

    state: V1TaskState
    message_text: str | None = None
    artifacts: list[V1Artifact] = field(default_factory=list)
    direct: bool = False  # answer message_text as a Message and keep no task

    @classmethod
    def reply(cls, text: str) -> Outcome:
        """Answer the message with an agent Message of this text, and keep no task."""
        return cls(TASK_STATE_COMPLETED, message_text=text, direct=True)


class Progress(Protocol):
    """What an executor may report while it works; each report is persisted before it returns."""

    @property
    def canceled(self) -> bool:
        """True once a cancel of this task has been seen."""
        ...

    async def status(self, text: str) -> None:
        """A progress message; the task stays working."""
        ...

    async def artifact(
        self, artifact: V1Artifact, *, append: bool = False, last_chunk: bool = False
    ) -> None:
        """A new artifact, or with append=True more parts of the one with its artifactId."""
        ...


class Executor(Protocol):
    @property
    def pure(self) -> bool:
        """True when run() has no effect outside the task it is given (and reports nothing)."""
        ...

    async def run(self, task: V1Task, message: V1Message, progress: Progress) -> Outcome: ...

    async def cancel(self, task: V1Task) -> None:
        """Called before a task is canceled, e.g. to cancel work done elsewhere for it."""
        ...


@runtime_checkable
class Resumable(Protocol):
    """An executor whose work goes on outside this process (a task forwarded to a peer): when
    the process that ran it is gone, the next one resumes it instead of failing the task."""

    async def resume(self, task: V1Task, progress: Progress) -> Outcome:
        """Go on with `task` as it was stored; what it returns settles the task."""
        ...


class Detached:
    """The progress of a pure run: nothing is stored until its outcome, so reports are ignored."""

    canceled = False

    async def status(self, text: str) -> None:
        return None

    async def artifact(
        self, artifact: V1Artifact, *, append: bool = False, last_chunk: bool = False
    ) -> None:
        return None


def text_of(message: V1Message) -> str:
    return "\n".join(p.text for p in message.parts if isinstance(p, V1TextPart))


REPLY_OPTION, REPLY_MESSAGE = "reply", "message"


class EchoExecutor:
    """Completes at once with one artifact echoing the message's text parts; with
    `direct_reply`, answers a new message with a Message echoing them instead (no task)."""

    pure = True

    def __init__(self, direct_reply: bool = False) -> None:
        self.direct_reply = direct_reply

    @classmethod
    def from_options(cls, options: dict[str, object] | None) -> EchoExecutor:
        """The agent's `executor.options`: `{reply: message}` for direct replies."""
        reply = (options or {}).get(REPLY_OPTION)
        if reply not in (None, REPLY_MESSAGE):
            raise ValueError(f"echo: option reply is {REPLY_MESSAGE!r} or absent")
        return cls(direct_reply=reply == REPLY_MESSAGE)

    async def run(self, task: V1Task, message: V1Message, progress: Progress) -> Outcome:
        if self.direct_reply:
            return Outcome.reply(text_of(message))
        artifact = V1Artifact(
            artifactId=new_id(), name="echo", parts=[V1TextPart(text=text_of(message))]
        )
        return Outcome(TASK_STATE_COMPLETED, artifacts=[artifact])

    async def cancel(self, task: V1Task) -> None:
        return None


class ParkExecutor:
    """Parks the task in input-required; follow-ups keep it there until it is canceled."""

    pure = True

    async def run(self, task: V1Task, message: V1Message, progress: Progress) -> Outcome:
        return Outcome(TASK_STATE_INPUT_REQUIRED, message_text="waiting for input")

    async def cancel(self, task: V1Task) -> None:
        return None


def _artifact(part: dict[str, object]) -> V1Artifact:
    return V1Artifact.model_validate(
        {"artifactId": new_id(), "name": "conformance", "parts": [part]}
    )


class ConformanceExecutor:
    """For conformance kits (the A2A TCK): the outcome the message's messageId prefix names,
    the kit's in-band scenario signal (a state, or an artifact of one kind); any other
    message completes with a fixed reply."""

    pure = True
    STATES: tuple[tuple[str, V1TaskState], ...] = (
        ("tck-input-required", TASK_STATE_INPUT_REQUIRED),
        ("tck-reject-task", TASK_STATE_REJECTED),
    )
    # Longest prefixes first: tck-artifact-file-url before tck-artifact-file.
    ARTIFACTS: tuple[tuple[str, dict[str, object]], ...] = (
        ("tck-artifact-text", {"text": "Generated text content"}),
        ("tck-artifact-file-url", {
            "url": "https://example.com/output.txt", "filename": "output.txt",
            "mediaType": "text/plain"}),
        ("tck-artifact-file", {
            "raw": "R2VuZXJhdGVkIGZpbGUgY29udGVudA==", "filename": "output.txt",
            "mediaType": "text/plain"}),
        ("tck-artifact-data", {"data": {"key": "value", "count": 42}}),
    )
    REPLY = "Hello from TCK"
    # The kit's scenario for an agent that answers with a Message, not a task.
    DIRECT = ("tck-message-response", "Direct message response")

    async def run(self, task: V1Task, message: V1Message, progress: Progress) -> Outcome:
        prefix, text = self.DIRECT
        if message.messageId.startswith(prefix):
            return Outcome.reply(text)
        for prefix, state in self.STATES:
            if message.messageId.startswith(prefix):
                return Outcome(state, message_text=f"conformance: {state_v03(state)}")
        for prefix, part in self.ARTIFACTS:
            if message.messageId.startswith(prefix):
                return Outcome(TASK_STATE_COMPLETED, artifacts=[_artifact(part)])
        return Outcome(TASK_STATE_COMPLETED, message_text=self.REPLY)

    async def cancel(self, task: V1Task) -> None:
        return None
