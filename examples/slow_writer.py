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

It also shows resuming (`resume`): when the node restarts while it writes, the next run of the
node goes on from the chunks already stored instead of failing the task.
"""

from __future__ import annotations

import asyncio
from typing import Any

from synthorg.generated.models import Artifact, Message, Task, TextPart
from synthorg.tasks.executors import Outcome, Progress, text_of


class SlowWriter:
    pure = False

    def __init__(self, seconds: float, chunks: int) -> None:
        self._seconds = seconds
        self._chunks = chunks

    async def run(self, task: Task, message: Message, progress: Progress) -> Outcome:
        text = text_of(message)
        if text.strip() == "ask":
            return Outcome("input-required", message_text="what should I write about?")
        return await self._write(task, text, 1, progress)

    async def resume(self, task: Task, progress: Progress) -> Outcome:
        """Go on after a restart: the message is the task's last user message, and the
        chunks already in the answer are not written again."""
        message = next((m for m in reversed(task.history or []) if m.role == "user"), None)
        if message is None:
            return Outcome("failed", message_text="nothing to write about")
        answer = next((a for a in task.artifacts or [] if a.artifactId == _answer(task)), None)
        done = len(answer.parts) if answer is not None else 0
        return await self._write(task, text_of(message), done + 1, progress)

    async def _write(self, task: Task, text: str, first: int, progress: Progress) -> Outcome:
        artifact_id = _answer(task)
        for step in range(first, self._chunks + 1):
            await asyncio.sleep(self._seconds / self._chunks)  # the agent's work
            await progress.status(f"writing {step}/{self._chunks}")
            chunk = Artifact(
                artifactId=artifact_id,
                name="answer",
                parts=[TextPart(kind="text", text=f"[{step}] {text}\n")],
            )
            await progress.artifact(chunk, append=step > 1, last_chunk=step == self._chunks)
        return Outcome("completed", message_text="done")

    async def cancel(self, task: Task) -> None:
        return None  # nothing outside the task to undo


def _answer(task: Task) -> str:
    return f"{task.id}-answer"


def factory(options: dict[str, Any]) -> SlowWriter:
    seconds = float(options.get("seconds", 3.0))
    chunks = int(options.get("chunks", 6))
    if seconds < 0 or chunks < 1:
        raise ValueError("seconds must be >= 0 and chunks >= 1")
    return SlowWriter(seconds, chunks)
