"""historyLength, one rule for every answer that carries a task (tasks/get, message/send,
a send's stream, ListTasks): absent keeps the whole history; n keeps the n most recent
messages (a value beyond the history keeps all of it); 0 returns none, the member omitted
as A2A 1.0 asks. The stored task is never cut, only the copy answered."""

from __future__ import annotations

from synthorg.generated.models import V1Task


def recent_history(task: V1Task, history_length: int | None) -> V1Task:
    if history_length is None or task.history is None:
        return task
    if history_length == 0:
        return task.model_copy(update={"history": None})
    return task.model_copy(update={"history": task.history[-history_length:]})
