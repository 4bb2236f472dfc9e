"""Which of this node's tasks an operator lists: the admin API's task list query, kept below
the handlers that parse it and the admin task operations that answer it."""

from __future__ import annotations

from typing import NamedTuple

from synthorg.generated.constants import TASK_DIRECTION_INBOUND

DEFAULT_PAGE = 25


class TaskListQuery(NamedTuple):
    direction: str = TASK_DIRECTION_INBOUND  # or TASK_DIRECTION_OUTBOUND
    peer: str | None = None
    agent: str | None = None
    state: str | None = None
    since: str | None = None  # the store's timestamp form
    page_size: int = DEFAULT_PAGE
    offset: int = 0  # the page token
