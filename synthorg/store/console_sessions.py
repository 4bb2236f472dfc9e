"""The operator console's sessions, in the node's store: every worker process and every
replica serving the node sees a session the moment it is made, and its end at sign-out.

A session is kept by `key`, a SHA-256 digest of its id (the id itself, the cookie's value,
is never stored), with its wall-clock creation and expiry (seconds since the epoch).
"""

from __future__ import annotations

from typing import Protocol


class ConsoleSessionStore(Protocol):
    async def add(self, key: str, created: float, expires: float, keep: int) -> None:
        """Record a session; sweep the expired ones (at `created`) and, beyond `keep`, drop
        the ones expiring first (the least recently used)."""
        ...

    async def expiry(self, key: str, now: float) -> float | None:
        """When the session expires; None when it is unknown or expired at `now`."""
        ...

    async def extend(self, key: str, expires: float) -> None:
        """Move the session's expiry to `expires` (nothing when it is gone)."""
        ...

    async def remove(self, key: str) -> None: ...
