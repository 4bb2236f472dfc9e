"""A slow agent: it works for a while, reports its progress, and writes its answer in chunks.

config.yaml:

    agents:
      - id: writer
        name: Slow writer
        executor:
          kind: python
          entrypoint: examples.slow_writer:factory
          options: {seconds: 3, chunks: 6}

Each of `chunks` steps waits `seconds / chunks`, says how far it is, and appends one chunk of
the artifact; the last chunk closes it and the task completes. A cancel stops it between two
chunks (the wait is where it sees it). A message whose text is "ask" parks the task in
input-required, to show how an agent asks for more.

The agent sees the task and the message as A2A 1.0 objects (V1Task, V1Message) and reports
V1Artifact chunks; its states are the 1.0 names (TASK_STATE_COMPLETED ...).

It also shows resuming (`resume`): when the node restarts while it writes, the next run of the
node goes on from the chunks already stored instead of failing the task.
"""

from __future__ import annotations

import asyncio
from typing import Any

from synthorg.generated.constants import (
    TASK_STATE_COMPLETED,
    TASK_STATE_FAILED,
    TASK_STATE_INPUT_REQUIRED,
    V1_ROLE_USER,
)
from synthorg.generated.models import V1Artifact, V1Message, V1Task, V1TextPart
from synthorg.tasks.executors import Outcome, Progress, text_of


class SlowWriter:
    pure = False

    def __init__(self, seconds: float, chunks: int) -> None:
        self._seconds = seconds
        self._chunks = chunks

    async def run(self, task: V1Task, message: V1Message, progress: Progress) -> Outcome:
        text = text_of(message)
        if text.strip() == "ask":
            return Outcome(TASK_STATE_INPUT_REQUIRED, message_text="what should I write about?")
        return await self._write(task, text, 1, progress)

    async def resume(self, task: V1Task, progress: Progress) -> Outcome:
        """Go on after a restart: the message is the task's last user message, and the
        chunks already in the answer are not written again."""
        message = next((m for m in reversed(task.history or []) if m.role == V1_ROLE_USER), None)
        if message is None:
            return Outcome(TASK_STATE_FAILED, message_text="nothing to write about")
        answer = next((a for a in task.artifacts or [] if a.artifactId == _answer(task)), None)
        done = len(answer.parts) if answer is not None else 0
        return await self._write(task, text_of(message), done + 1, progress)

    async def _write(self, task: V1Task, text: str, first: int, progress: Progress) -> Outcome:
        artifact_id = _answer(task)
        for step in range(first, self._chunks + 1):
            await asyncio.sleep(self._seconds / self._chunks)  # the agent's work
            await progress.status(f"writing {step}/{self._chunks}")
            chunk = V1Artifact(
                artifactId=artifact_id,
                name="answer",
                parts=[V1TextPart(text=f"[{step}] {text}\n")],
            )
            await progress.artifact(chunk, append=step > 1, last_chunk=step == self._chunks)
        return Outcome(TASK_STATE_COMPLETED, message_text="done")

    async def cancel(self, task: V1Task) -> None:
        return None  # nothing outside the task to undo


def _answer(task: V1Task) -> str:
    return f"{task.id}-answer"


def factory(options: dict[str, Any]) -> SlowWriter:
    seconds = float(options.get("seconds", 3.0))
    chunks = int(options.get("chunks", 6))
    if seconds < 0 or chunks < 1:
        raise ValueError("seconds must be >= 0 and chunks >= 1")
    return SlowWriter(seconds, chunks)
