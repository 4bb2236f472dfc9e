"""The console's sessions in SQLite (`console_sessions`), shared by the node's workers."""

from __future__ import annotations

import sqlite3

from synthorg.store.sqlite.database import Database


class SqliteConsoleSessions:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, key: str, created: float, expires: float, keep: int) -> None:
        def job(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO console_sessions (key, created_at, expires_at) "
                         "VALUES (?, ?, ?)", (key, created, expires))
            conn.execute("DELETE FROM console_sessions WHERE expires_at <= ?", (created,))
            conn.execute(
                "DELETE FROM console_sessions WHERE key IN (SELECT key FROM console_sessions "
                "ORDER BY expires_at DESC, created_at DESC LIMIT -1 OFFSET ?)", (keep,))

        await self._db.write(job)

    async def expiry(self, key: str, now: float) -> float | None:
        row = self._db.query_one(
            "SELECT expires_at FROM console_sessions WHERE key = ? AND expires_at > ?",
            (key, now))
        return None if row is None else float(row[0])

    async def extend(self, key: str, expires: float) -> None:
        await self._db.write(lambda conn: conn.execute(
            "UPDATE console_sessions SET expires_at = ? WHERE key = ?", (expires, key)))

    async def remove(self, key: str) -> None:
        await self._db.write(lambda conn: conn.execute(
            "DELETE FROM console_sessions WHERE key = ?", (key,)))
