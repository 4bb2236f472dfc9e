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


class ConformanceExecutor:
    """For conformance kits (the A2A TCK): the state the message's messageId prefix names,
    the kit's in-band scenario signal; any other message is echoed, as EchoExecutor does."""

    pure = True
    PREFIXES: tuple[tuple[str, TaskState], ...] = (
        ("tck-input-required", STATE_INPUT_REQUIRED),
        ("tck-reject-task", STATE_REJECTED),
    )

    async def run(self, task: Task, message: Message) -> Outcome:
        for prefix, state in self.PREFIXES:
            if message.messageId.startswith(prefix):
                return Outcome(state, message_text=f"conformance: {state}")
        return await EchoExecutor().run(task, message)

    async def cancel(self, task: Task) -> None:
        return None
