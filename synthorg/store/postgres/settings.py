"""Runtime setting writes in PostgreSQL (the `settings` table), shared by every replica.

The table is held in memory as of its revision and reloaded when the revision moves, so the
hot path's `read_all` is a dict copy and a write through any replica or the CLI applies on
every replica from its next request.
"""

from __future__ import annotations

import json
from typing import Any

from synthorg.clock import utc_now
from synthorg.store.postgres.database import Connection, PgDatabase, Row
from synthorg.store.postgres.revisions import SETTINGS, PgRevisions
from synthorg.store.postgres.snapshot import Snapshot

_SNAPSHOT = (
    "SELECT r.value, s.namespace, s.key, s.value FROM revisions r "
    "LEFT JOIN settings s ON true WHERE r.name = 'settings'"
)
Values = dict[str, dict[str, Any]]


def _values(rows: list[Row]) -> Values:
    found: Values = {}
    for _, namespace, key, value in rows:
        found.setdefault(namespace, {})[key] = json.loads(value)
    return found


class PgSettingsStore:
    def __init__(self, db: PgDatabase, revisions: PgRevisions) -> None:
        self._db = db
        self._revisions = revisions
        self._snapshot: Snapshot[Values] = Snapshot(db, revisions, SETTINGS, _SNAPSHOT, _values)
        self._seen = -1

    def read_all(self, namespace: str) -> dict[str, Any]:
        values = self._snapshot.current()
        self._seen = self._snapshot.revision
        return dict(values.get(namespace, {}))

    def changed_elsewhere(self) -> bool:
        return self._revisions.of(SETTINGS) != self._seen

    def write(self, namespace: str, key: str, value: Any) -> Any:
        encoded, now = json.dumps(value), utc_now()

        async def job(conn: Connection) -> Any:
            previous = await _current(conn, namespace, key)
            await conn.execute(
                "INSERT INTO settings (namespace, key, value, updated_at) VALUES ($1, $2, $3, $4) "
                "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at",
                namespace, key, encoded, now,
            )
            return previous

        return self._write(job)

    def reset(self, namespace: str, key: str) -> Any:
        async def job(conn: Connection) -> Any:
            previous = await _current(conn, namespace, key)
            await conn.execute("DELETE FROM settings WHERE namespace = $1 AND key = $2",
                               namespace, key)
            return previous

        return self._write(job)

    def _write(self, job: Any) -> Any:
        previous = self._db.blocking(lambda db: db.transaction(job))
        self._snapshot.stale()
        return previous


async def _current(conn: Connection, namespace: str, key: str) -> Any:
    # FOR UPDATE: two writers of one setting take turns, so each returns the value it replaced.
    raw = await conn.fetchval(
        "SELECT value FROM settings WHERE namespace = $1 AND key = $2 FOR UPDATE", namespace, key
    )
    return None if raw is None else json.loads(raw)
