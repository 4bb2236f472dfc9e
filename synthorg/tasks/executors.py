"""Executors run an agent's side of a task. Each returns the task's next status and artifacts.

Executors are chosen per agent in the company YAML (`executor.kind`). They receive plain A2A
JSON dicts and never touch the store: the task service persists what they return.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class Outcome:
    """What an executor decided: the new state, an optional agent message, new artifacts."""

    state: str
    message_text: str | None = None
    artifacts: list[dict[str, Any]] = field(default_factory=list)


class Executor(Protocol):
    async def run(self, task: dict[str, Any], message: dict[str, Any]) -> Outcome: ...

    async def cancel(self, task: dict[str, Any]) -> None: ...


def _text_of(message: dict[str, Any]) -> str:
    return "\n".join(p["text"] for p in message["parts"] if p.get("kind") == "text")


class EchoExecutor:
    """Completes at once with one artifact echoing the message's text parts."""

    async def run(self, task: dict[str, Any], message: dict[str, Any]) -> Outcome:
        artifact = {
            "artifactId": str(uuid.uuid4()),
            "name": "echo",
            "parts": [{"kind": "text", "text": _text_of(message)}],
        }
        return Outcome("completed", artifacts=[artifact])

    async def cancel(self, task: dict[str, Any]) -> None:
        return None


class ParkExecutor:
    """Parks the task in input-required; follow-ups keep it there until it is canceled."""

    async def run(self, task: dict[str, Any], message: dict[str, Any]) -> Outcome:
        return Outcome("input-required", message_text="waiting for input")

    async def cancel(self, task: dict[str, Any]) -> None:
        return None
