"""Which of a caller's tasks to list, and one page of them: the shapes both the handlers
(through `handlers/context.py`) and the task service speak, kept below both."""

from __future__ import annotations

from typing import NamedTuple

from synthorg.generated.models import V1Task


class TaskQuery(NamedTuple):
    """Which of the caller's tasks to list, one page at a time (every filter optional)."""

    context_id: str | None = None
    state: str | None = None  # a V1TaskState (TASK_STATE_WORKING)
    status_since: str | None = None  # ISO 8601: the status changed at or after it
    page_size: int = 50
    page_token: str = ""  # a previous page's next_page_token; empty for the first
    history_length: int | None = None
    include_artifacts: bool = False


class TaskPage(NamedTuple):
    """One page of the caller's tasks, newest first."""

    tasks: list[V1Task]
    next_page_token: str  # empty on the last page
    page_size: int
    total_size: int
