"""A bounded least-recently-used map whose bound can be changed while it is in use."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    def __init__(self, max_entries: int) -> None:
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._max = _checked(max_entries)

    @property
    def max_entries(self) -> int:
        return self._max

    def get(self, key: K) -> V | None:
        """The value, now the most recently used; None when absent."""
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def peek(self, key: K) -> V | None:
        """The value without touching its recency."""
        return self._entries.get(key)

    def put(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        self._evict()

    def pop(self, key: K) -> V | None:
        return self._entries.pop(key, None)

    def resize(self, max_entries: int) -> None:
        """Change the bound; lowering it evicts the least recently used entries at once."""
        self._max = _checked(max_entries)
        self._evict()

    def keys(self) -> list[K]:
        """Least recently used first."""
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def _evict(self) -> None:
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)


def _checked(max_entries: int) -> int:
    if max_entries < 1:
        raise ValueError("max_entries must be at least 1")
    return max_entries
