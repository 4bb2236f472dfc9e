"""Models that never change once made, and their JSON, made once for each.

Some objects are handed out again and again while they stand: the task stores' read cache
gives the same `V1Task` for every read of a version, and the 0.3 edge keeps the Task it made
for each of those (`task_v03`). Nothing changes a task model once made (every change is a
`model_copy`), which is what lets those caches hand the objects out at all. Whoever hands
an object out like that settles it here, and the replies then serialise it once: a caller
polling tasks/get gets bytes made at the version's first answer.

Only settled objects are kept, by the object's id and weakly (the entry goes with the
object), so an object answered once (a send's task) costs nothing here. Never settle an
object that is changed after it was handed out.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

# id -> (the object, weakly; its JSON once made)
_SETTLED: dict[int, tuple[weakref.ref[BaseModel], bytes | None]] = {}


def _forget(key: int) -> Callable[[object], None]:
    def forget(_: object) -> None:
        _SETTLED.pop(key, None)
    return forget


def settle(model: M) -> M:
    """`model` will not change again: its JSON may be made once and kept while it lives."""
    key = id(model)
    entry = _SETTLED.get(key)
    if entry is None or entry[0]() is not model:
        _SETTLED[key] = (weakref.ref(model, _forget(key)), None)
    return model


def is_settled(model: BaseModel) -> bool:
    entry = _SETTLED.get(id(model))
    return entry is not None and entry[0]() is model


def json_of(model: BaseModel) -> bytes:
    """The model as JSON (its JSON names, no null members); made once for a settled one."""
    key = id(model)
    entry = _SETTLED.get(key)
    if entry is None or entry[0]() is not model:
        return _json(model)
    data = entry[1]
    if data is None:
        data = _json(model)
        _SETTLED[key] = (entry[0], data)
    return data


def _json(model: BaseModel) -> bytes:
    return model.__pydantic_serializer__.to_json(model, by_alias=True, exclude_none=True)
