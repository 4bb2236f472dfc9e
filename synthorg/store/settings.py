"""Durable runtime setting writes (namespace, key) -> JSON value."""

from __future__ import annotations

from typing import Any, Protocol


class SettingsStore(Protocol):
    def read_all(self, namespace: str) -> dict[str, Any]: ...

    def write(self, namespace: str, key: str, value: Any) -> Any:
        """Store the value; returns the previous one (None when unset)."""
        ...

    def reset(self, namespace: str, key: str) -> Any:
        """Drop the runtime write; returns the previous value (None when unset)."""
        ...

    def changed_elsewhere(self) -> bool:
        """True when a write since the last read_all may have changed what read_all returns."""
        ...
