"""Executors run an agent's side of a task and say what happened: the next state, perhaps an
agent message, and new artifacts.

Executors are chosen per agent in the company YAML (`executor.kind`). They see the task and
the message as the generated models and never touch the store: the task service persists
what they return. A `pure` executor only computes, with no effect outside the task, so its
outcome can be committed together with the task and the message that led to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from synthorg.clock import new_id
from synthorg.generated.constants import STATE_COMPLETED, STATE_INPUT_REQUIRED, STATE_REJECTED
from synthorg.generated.models import Artifact, Message, Task, TaskState, TextPart


@dataclass(frozen=True)
class Outcome:
    """What an executor decided: the new state, an optional agent message, new artifacts."""

    state: TaskState
    message_text: str | None = None
    artifacts: list[Artifact] = field(default_factory=list)


class Executor(Protocol):
    @property
    def pure(self) -> bool:
        """True when run() has no effect outside the task it is given."""
        ...

    async def run(self, task: Task, message: Message) -> Outcome: ...

    async def cancel(self, task: Task) -> None: ...


def text_of(message: Message) -> str:
    return "\n".join(p.text for p in message.parts if isinstance(p, TextPart))


class EchoExecutor:
    """Completes at once with one artifact echoing the message's text parts."""

    pure = True

    async def run(self, task: Task, message: Message) -> Outcome:
        artifact = Artifact(
            artifactId=new_id(),
            name="echo",
            parts=[TextPart(kind="text", text=text_of(message))],
        )
        return Outcome(STATE_COMPLETED, artifacts=[artifact])

    async def cancel(self, task: Task) -> None:
        return None


class ParkExecutor:
    """Parks the task in input-required; follow-ups keep it there until it is canceled."""

    pure = True

    async def run(self, task: Task, message: Message) -> Outcome:
        return Outcome(STATE_INPUT_REQUIRED, message_text="waiting for input")

    async def cancel(self, task: Task) -> None:
        return None


def _artifact(part: dict[str, object]) -> Artifact:
    return Artifact.model_validate({"artifactId": new_id(), "name": "conformance", "parts": [part]})


class ConformanceExecutor:
    """For conformance kits (the A2A TCK): the outcome the message's messageId prefix names,
    the kit's in-band scenario signal (a state, or an artifact of one kind); any other
    message completes with a fixed reply."""

    pure = True
    STATES: tuple[tuple[str, TaskState], ...] = (
        ("tck-input-required", STATE_INPUT_REQUIRED),
        ("tck-reject-task", STATE_REJECTED),
    )
    # Longest prefixes first: tck-artifact-file-url before tck-artifact-file.
    ARTIFACTS: tuple[tuple[str, dict[str, object]], ...] = (
        ("tck-artifact-text", {"kind": "text", "text": "Generated text content"}),
        ("tck-artifact-file-url", {"kind": "file", "file": {
            "uri": "https://example.com/output.txt", "name": "output.txt",
            "mimeType": "text/plain"}}),
        ("tck-artifact-file", {"kind": "file", "file": {
            "bytes": "R2VuZXJhdGVkIGZpbGUgY29udGVudA==", "name": "output.txt",
            "mimeType": "text/plain"}}),
        ("tck-artifact-data", {"kind": "data", "data": {"key": "value", "count": 42}}),
    )
    REPLY = "Hello from TCK"

    async def run(self, task: Task, message: Message) -> Outcome:
        for prefix, state in self.STATES:
            if message.messageId.startswith(prefix):
                return Outcome(state, message_text=f"conformance: {state}")
        for prefix, part in self.ARTIFACTS:
            if message.messageId.startswith(prefix):
                return Outcome(STATE_COMPLETED, artifacts=[_artifact(part)])
        return Outcome(STATE_COMPLETED, message_text=self.REPLY)

    async def cancel(self, task: Task) -> None:
        return None
