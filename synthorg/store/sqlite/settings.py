"""Runtime setting writes in SQLite (the `settings` table).

Readers re-read only when the settings revision moved (any process's write moves it), so the
hot path can ask on every request for one cheap check.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from synthorg.clock import utc_now
from synthorg.store.sqlite.database import Database
from synthorg.store.sqlite.revisions import SETTINGS, Revisions


class SqliteSettingsStore:
    def __init__(self, db: Database, revisions: Revisions | None = None) -> None:
        self._db = db
        self._revisions = revisions or Revisions(db)
        self._seen: int | None = None

    def read_all(self, namespace: str) -> dict[str, Any]:
        self._seen = self._revisions.of(SETTINGS)
        rows = self._db.query("SELECT key, value FROM settings WHERE namespace = ?", (namespace,))
        return {key: json.loads(value) for key, value in rows}

    def write(self, namespace: str, key: str, value: Any) -> Any:
        def job(conn: sqlite3.Connection) -> Any:
            previous = _current(conn, namespace, key)
            conn.execute(
                "INSERT INTO settings (namespace, key, value, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at",
                (namespace, key, json.dumps(value), utc_now()),
            )
            return previous

        return self._db.write_blocking(job)

    def reset(self, namespace: str, key: str) -> Any:
        def job(conn: sqlite3.Connection) -> Any:
            previous = _current(conn, namespace, key)
            conn.execute("DELETE FROM settings WHERE namespace = ? AND key = ?", (namespace, key))
            return previous

        return self._db.write_blocking(job)

    def changed_elsewhere(self) -> bool:
        return self._revisions.of(SETTINGS) != self._seen


def _current(conn: sqlite3.Connection, namespace: str, key: str) -> Any:
    row = conn.execute(
        "SELECT value FROM settings WHERE namespace = ? AND key = ?", (namespace, key)
    ).fetchone()
    return None if row is None else json.loads(row[0])
