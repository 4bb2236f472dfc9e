"""ListTasks paging: opaque page tokens over the store's cursors, and the timestamp filter in
the store's own form. Both are caller input, refused as invalid params when malformed."""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime

from synthorg.errors import InvalidParams
from synthorg.generated.models import V1Task
from synthorg.http.numbers import ascii_int
from synthorg.store.tasks import TaskFilter, TaskStore
from synthorg.tasks.history import recent_history
from synthorg.tasks.query import TaskPage, TaskQuery

_TOKEN_PREFIX = "c1:"


def encode_token(cursor: int) -> str:
    return base64.urlsafe_b64encode(f"{_TOKEN_PREFIX}{cursor}".encode()).decode().rstrip("=")


def decode_token(token: str) -> int | None:
    """The cursor a page token stands for; None for the first page (empty token)."""
    if not token:
        return None
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    digits = text.removeprefix(_TOKEN_PREFIX)
    cursor = ascii_int(digits) if text.startswith(_TOKEN_PREFIX) else None
    if cursor is None:
        raise InvalidParams("Invalid params: pageToken is not one this node issued")
    return cursor


def store_timestamp(value: str) -> str:
    """An RFC 3339 time as the store writes them: UTC, milliseconds, `Z`."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidParams(
            "Invalid params: statusTimestampAfter is not an RFC 3339 time"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _shaped(task: V1Task, query: TaskQuery) -> V1Task:
    update: dict[str, object] = {}
    if not query.include_artifacts and task.artifacts is not None:
        update["artifacts"] = None
    return recent_history(task.model_copy(update=update) if update else task, query.history_length)


async def page(store: TaskStore, peer: str, query: TaskQuery) -> TaskPage:
    before = decode_token(query.page_token)
    since = store_timestamp(query.status_since) if query.status_since is not None else None
    where = TaskFilter(query.context_id, query.state, since)
    found = await store.page(peer, where, before, query.page_size + 1)
    rows = found.rows[: query.page_size]
    more = len(found.rows) > query.page_size
    return TaskPage(
        [_shaped(task, query) for _, task in rows],
        encode_token(rows[-1][0]) if more and rows else "",
        query.page_size,
        found.total,
    )
