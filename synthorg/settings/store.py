"""Durable runtime setting writes, in the node's store (the `settings` table)."""

from __future__ import annotations

import json
import sqlite3
import threading
from typing import Any, Protocol

from synthorg.store.db import connection_lock, transaction, utc_now


class SettingsStore(Protocol):
    def read_all(self, namespace: str) -> dict[str, Any]: ...

    def write(self, namespace: str, key: str, value: Any) -> Any: ...

    def reset(self, namespace: str, key: str) -> Any: ...

    def changed_elsewhere(self) -> bool: ...


class SqliteSettingsStore:
    """Writes are one transaction each and return the previous value (None when unset).

    `changed_elsewhere` uses SQLite's data_version, which moves when another connection (the
    CLI, another replica process on this file) commits, so readers re-read only then. A shared
    PostgreSQL store would use LISTEN/NOTIFY on the same contract.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._lock = connection_lock(conn) or threading.RLock()
        self._seen_version: int | None = None

    def read_all(self, namespace: str) -> dict[str, Any]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT key, value FROM settings WHERE namespace = ?", (namespace,)
            ).fetchall()
            self._seen_version = self._data_version()
        return {key: json.loads(value) for key, value in rows}

    def write(self, namespace: str, key: str, value: Any) -> Any:
        with transaction(self._conn, self._lock) as conn:
            previous = self._current(conn, namespace, key)
            conn.execute(
                "INSERT INTO settings (namespace, key, value, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at",
                (namespace, key, json.dumps(value), utc_now()),
            )
        return previous

    def reset(self, namespace: str, key: str) -> Any:
        with transaction(self._conn, self._lock) as conn:
            previous = self._current(conn, namespace, key)
            conn.execute("DELETE FROM settings WHERE namespace = ? AND key = ?", (namespace, key))
        return previous

    def changed_elsewhere(self) -> bool:
        with self._lock:
            return self._data_version() != self._seen_version

    def _data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    @staticmethod
    def _current(conn: sqlite3.Connection, namespace: str, key: str) -> Any:
        row = conn.execute(
            "SELECT value FROM settings WHERE namespace = ? AND key = ?", (namespace, key)
        ).fetchone()
        return None if row is None else json.loads(row[0])
