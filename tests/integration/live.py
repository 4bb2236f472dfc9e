"""A NodeProcess whose stderr lines can be awaited, so event tests never sleep.

The node writes an event before it answers, but the harness's reader thread may not have
read that line yet when the response arrives. `LiveNode.wait_for_event` blocks on a
condition the reader thread signals for every line it appends: no polling, no sleeps.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Self

from tests.support.node import NodeProcess

EVENT_TIMEOUT = 10.0


class _NotifyingLines(list[str]):
    """The node's line buffer; every append wakes whoever waits on `changed`."""

    def __init__(self, changed: threading.Condition) -> None:
        super().__init__()
        self._changed = changed

    def append(self, line: str) -> None:
        with self._changed:
            super().append(line)
            self._changed.notify_all()


class LiveNode(NodeProcess):
    def __init__(
        self, data_dir: Path, config_yaml: str | None = None, env: dict[str, str] | None = None
    ) -> None:
        self._changed = threading.Condition()
        self._lines = _NotifyingLines(self._changed)
        super().__init__(data_dir, config_yaml, env)

    # NodeProcess assigns `self.lines = []` on start; keep the buffer a notifying one.
    @property
    def lines(self) -> list[str]:
        return self._lines

    @lines.setter
    def lines(self, value: list[str]) -> None:
        fresh = _NotifyingLines(self._changed)
        fresh.extend(value)
        self._lines = fresh

    def __enter__(self) -> Self:
        self.start()
        return self

    def find_event(self, name: str, **fields: Any) -> dict[str, Any] | None:
        for event in self.events(name):
            if all(event.get(key) == value for key, value in fields.items()):
                return event
        return None

    def wait_for_event(
        self, name: str, timeout: float = EVENT_TIMEOUT, **fields: Any
    ) -> dict[str, Any]:
        """The first `name` event whose fields include `fields`; fails after `timeout`."""
        with self._changed:
            found = self._changed.wait_for(lambda: self.find_event(name, **fields), timeout)
        if found is None:
            raise AssertionError(f"no {name} event with {fields} within {timeout}s")
        return found

    def wait_for_events(
        self, name: str, count: int, timeout: float = EVENT_TIMEOUT, **fields: Any
    ) -> list[dict[str, Any]]:
        """Every `name` event whose fields include `fields`, once there are `count` or more."""

        def matching() -> list[dict[str, Any]]:
            return [
                event
                for event in self.events(name)
                if all(event.get(key) == value for key, value in fields.items())
            ]

        with self._changed:
            found = self._changed.wait_for(lambda: len(matching()) >= count, timeout)
        if not found:
            raise AssertionError(f"fewer than {count} {name} events with {fields} in {timeout}s")
        return matching()

    def wait_for_line(self, fragment: str, timeout: float = EVENT_TIMEOUT) -> str:
        def match() -> str | None:
            return next((line for line in list(self.lines) if fragment in line), None)

        with self._changed:
            found = self._changed.wait_for(match, timeout)
        if found is None:
            raise AssertionError(f"no stderr line containing {fragment!r} within {timeout}s")
        return found
