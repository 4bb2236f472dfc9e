"""The audit trail in SQLite (the `audit` table): one row per record, in commit order."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from synthorg.store.audit import encode
from synthorg.store.sqlite.database import Database


class SqliteAuditStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def append(self, record: dict[str, Any]) -> None:
        row = (str(record["ts"]), encode(record))

        def job(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO audit (ts, record) VALUES (?, ?)", row)

        self._db.write_blocking(job)

    def list(self, since: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        where, params = ("WHERE ts >= ?", [since]) if since is not None else ("", [])
        if limit is None:
            rows = self._db.query(f"SELECT record FROM audit {where} ORDER BY seq", params)
        else:
            rows = self._db.query(
                f"SELECT record FROM (SELECT seq, record FROM audit {where} ORDER BY seq DESC "
                "LIMIT ?) ORDER BY seq", [*params, limit],
            )
        return [json.loads(row[0]) for row in rows]
