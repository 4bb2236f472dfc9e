"""The audit trail in PostgreSQL: every replica's and the CLI's records in one table, in the
order the database committed them."""

from __future__ import annotations

import json
from typing import Any

from synthorg.store.audit import encode
from synthorg.store.postgres.database import PgDatabase


class PgAuditStore:
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    def append(self, record: dict[str, Any]) -> None:
        ts, encoded = str(record["ts"]), encode(record)
        self._db.blocking(lambda db: db.execute(
            "INSERT INTO audit (ts, record) VALUES ($1, $2)", ts, encoded
        ))

    def list(self, since: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        args: list[object] = [] if since is None else [since]
        where = "" if since is None else "WHERE ts >= $1"
        if limit is None:
            sql = f"SELECT record FROM audit {where} ORDER BY seq"
        else:
            sql = (f"SELECT record FROM (SELECT seq, record FROM audit {where} ORDER BY seq DESC "
                   f"LIMIT ${len(args) + 1}) AS newest ORDER BY seq")
            args.append(limit)
        rows = self._db.blocking_fetch(sql, *args)
        return [json.loads(row[0]) for row in rows]
