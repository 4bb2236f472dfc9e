"""Has the catalog or the settings changed? One cheap check per request.

Triggers move a counter in `revisions` on every change to `peers` or `settings`, whoever
writes (this node, another worker process, the CLI). Caches keyed on a counter drop
themselves when it moves, so a change applies from the next request.

Each read of the counters is a read transaction, and in WAL mode starting one costs several
microseconds (shared-memory locks). Within one request the counters are read once: the
gateway opens a request scope, and every cache consulted during that request shares the
reading taken at its first use, which is never older than the request itself. Outside a
request scope (the admin API, the CLI) every call reads afresh.
"""

from __future__ import annotations

from contextvars import ContextVar

from synthorg.store.sqlite.database import Database

CATALOG = "catalog"
SETTINGS = "settings"

# Per request: the counters as read at their first use in that request (None: not read yet).
_reading: ContextVar[dict[str, int] | None] = ContextVar("synthorg_revisions", default=None)
_NO_SCOPE: dict[str, int] = {}


def request_scope() -> None:
    """Start a request: the next revision check reads the store, later ones reuse it.

    ASGI servers run each request in its own task, with its own copy of the context, so the
    reading never leaks into another request. Work that outlives a request must not inherit
    its context (start it with a fresh `contextvars.Context()`)."""
    _reading.set(None)


class Revisions:
    def __init__(self, db: Database) -> None:
        self._db = db

    def of(self, name: str) -> int:
        reading = _reading.get(_NO_SCOPE)
        if reading is None or reading is _NO_SCOPE:
            fresh = self._read()
            if reading is None:
                _reading.set(fresh)
            return fresh.get(name, 0)
        return reading.get(name, 0)

    def _read(self) -> dict[str, int]:
        return {str(n): int(v) for n, v in self._db.query("SELECT name, value FROM revisions")}
