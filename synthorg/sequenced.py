"""One event of a stream with its sequence number in the task's event log (the SSE id)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Sequenced(Generic[T]):
    seq: int
    event: T
    # The event as stored (JSON), when read from the log: sent as it is, not serialised again
    # for every subscriber.
    raw: bytes | None = None
