"""One event of a stream with its sequence number in the task's event log (the SSE id)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Sequenced(Generic[T]):
    seq: int
    event: T
