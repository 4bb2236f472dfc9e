"""Per-peer token buckets in a SQLite file of their own beside the node's (`ratelimit.db`),
shared by the node's workers.

A file of its own: a lease is one autocommitted UPSERT, and it never waits behind (or holds
up) the node's group-committed writes. The statement never waits inside SQLite either: a
lock held by another worker (one statement, microseconds) is waited out on the event loop
with a short backoff, and past `LOCK_WAIT` the take fails (the limiter then falls back to
this process's share). Nothing here needs to survive power loss (an empty file is a full
bucket), so it is written with `synchronous=OFF`.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

from synthorg.store.private_file import ensure_private_file
from synthorg.store.ratebuckets import Lease

FILENAME = "ratelimit.db"
LOCK_WAIT = 0.05  # seconds a take waits for another worker's statement
_FIRST_BACKOFF, _MAX_BACKOFF = 0.0002, 0.005

_SCHEMA = """CREATE TABLE IF NOT EXISTS rate_buckets (
    peer TEXT PRIMARY KEY,
    tokens REAL NOT NULL,
    ts REAL NOT NULL,
    granted INTEGER NOT NULL
) WITHOUT ROWID"""

# `refilled` is the bucket brought to now; SET reads the old row, so `granted` and `tokens`
# both see the same refill. A clock that stepped back refills nothing (max(0, ...)).
_REFILLED = "min(:cap, tokens + max(0.0, :now - ts) * :rate)"
_TAKE = f"""INSERT INTO rate_buckets (peer, tokens, ts, granted)
VALUES (:peer, :cap - min(:want, CAST(:cap AS INTEGER)), :now, min(:want, CAST(:cap AS INTEGER)))
ON CONFLICT (peer) DO UPDATE SET
    tokens = {_REFILLED} - min(:want, CAST({_REFILLED} AS INTEGER)),
    granted = min(:want, CAST({_REFILLED} AS INTEGER)),
    ts = max(ts, :now)
RETURNING granted, tokens"""


class SqliteRateBuckets:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / FILENAME
        self._conn: sqlite3.Connection | None = None

    def _open(self) -> sqlite3.Connection:
        if self._conn is None:
            ensure_private_file(self.path)
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                   timeout=LOCK_WAIT)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute(_SCHEMA)
            conn.execute("PRAGMA busy_timeout=0")
            self._conn = conn
        return self._conn

    async def take(self, peer: str, rate: float, capacity: float, want: int) -> Lease:
        conn = self._open()
        params = {"peer": peer, "rate": rate, "cap": capacity, "want": want}
        deadline = time.monotonic() + LOCK_WAIT
        backoff = _FIRST_BACKOFF
        while True:
            try:
                params["now"] = time.time()  # one machine: the workers share its clock
                granted, left = conn.execute(_TAKE, params).fetchone()
                return Lease(int(granted), float(left))
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
