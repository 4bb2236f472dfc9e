"""The console's sessions in PostgreSQL (`console_sessions`), shared by every replica."""

from __future__ import annotations

from synthorg.store.postgres.database import Connection, PgDatabase


class PgConsoleSessions:
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def add(self, key: str, created: float, expires: float, keep: int) -> None:
        async def job(conn: Connection) -> None:
            await conn.execute("INSERT INTO console_sessions (key, created_at, expires_at) "
                               "VALUES ($1, $2, $3)", key, created, expires)
            await conn.execute("DELETE FROM console_sessions WHERE expires_at <= $1", created)
            await conn.execute(
                "DELETE FROM console_sessions WHERE key IN (SELECT key FROM console_sessions "
                "ORDER BY expires_at DESC, created_at DESC OFFSET $1)", keep)

        await self._db.transaction(job, "console session")

    async def expiry(self, key: str, now: float) -> float | None:
        row = await self._db.fetchrow(
            "SELECT expires_at FROM console_sessions WHERE key = $1 AND expires_at > $2",
            key, now)
        return None if row is None else float(row[0])

    async def extend(self, key: str, expires: float) -> None:
        await self._db.execute(
            "UPDATE console_sessions SET expires_at = $1 WHERE key = $2", expires, key)

    async def remove(self, key: str) -> None:
        await self._db.execute("DELETE FROM console_sessions WHERE key = $1", key)
