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
    # Not to be sent: the stream is admitted (the caller may follow the task) but has no
    # event yet, so its answer starts now with a keep-alive rather than waiting for one.
    quiet: bool = False
