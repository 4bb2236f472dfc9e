"""The node's SQLite file: private file modes, crash-safe pragmas, idempotent schema."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DB_FILENAME = "synthorg.db"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 5000

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS peers (
        name TEXT PRIMARY KEY,
        endpoint TEXT NOT NULL,
        scheme TEXT NOT NULL,
        secret_enc BLOB NOT NULL,
        created_at TEXT,
        updated_at TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS tasks (
        id TEXT PRIMARY KEY,
        peer TEXT NOT NULL,
        context_id TEXT NOT NULL,
        state TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at TEXT,
        updated_at TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS tasks_peer_id ON tasks (peer, id)",
    """CREATE TABLE IF NOT EXISTS message_keys (
        peer TEXT,
        message_id TEXT,
        digest TEXT NOT NULL,
        task_id TEXT NOT NULL,
        PRIMARY KEY (peer, message_id)
    )""",
    """CREATE TABLE IF NOT EXISTS delegations (
        id TEXT PRIMARY KEY,
        peer TEXT NOT NULL,
        remote_task_id TEXT NOT NULL,
        context_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        state TEXT NOT NULL,
        origin_task_id TEXT,
        body TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS delegations_origin ON delegations (origin_task_id)",
    """CREATE TABLE IF NOT EXISTS settings (
        namespace TEXT,
        key TEXT,
        value TEXT,
        updated_at TEXT,
        PRIMARY KEY (namespace, key)
    )""",
)


class SchemaVersionError(RuntimeError):
    """The database was written by a newer release than this one."""


class Database(sqlite3.Connection):
    """A connection that carries the lock every store sharing it must hold.

    Python's sqlite3 connection is one transaction context: without the lock, a read on
    one thread could see another thread's uncommitted BEGIN IMMEDIATE work.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lock = threading.RLock()


def utc_now() -> str:
    """ISO-8601 UTC with milliseconds and a `Z`, the form A2A timestamps use."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ensure_private_dir(path: Path) -> None:
    """Create `path` (and parents) if missing; a directory we create gets mode 0700."""
    try:
        path.mkdir(parents=True, mode=0o700)
    except FileExistsError:
        if not path.is_dir():
            raise
        return
    os.chmod(path, 0o700)  # mkdir's mode is filtered through the umask


def ensure_private_file(path: Path) -> None:
    """Create `path` empty with mode 0600 unless it exists; tighten an existing one to 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    os.close(fd)
    os.chmod(path, 0o600)


def connection_lock(conn: sqlite3.Connection) -> threading.RLock | None:
    """The shared lock of a connection from `open_database`, else None."""
    return conn.lock if isinstance(conn, Database) else None


@contextmanager
def transaction(conn: sqlite3.Connection, lock: threading.RLock) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT under `lock`: take the write lock up front, so a
    read-then-write never fails half-way with SQLITE_BUSY when another process writes."""
    with lock:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def open_database(data_dir: Path) -> Database:
    """Open (creating if needed) `data_dir/synthorg.db` with the node's pragmas and schema."""
    data_dir = Path(data_dir)
    ensure_private_dir(data_dir)
    path = data_dir / DB_FILENAME
    # Create the file 0600 before SQLite does (SQLite would honour the umask, often 0644);
    # SQLite gives the -wal and -shm files the database file's mode.
    ensure_private_file(path)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.chmod(side, 0o600)
    conn = sqlite3.connect(
        path,
        timeout=BUSY_TIMEOUT_MS / 1000,
        isolation_level=None,
        check_same_thread=False,
        factory=Database,
    )
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode=WAL")
        # In WAL mode NORMAL loses nothing on a process crash (kill -9), only on power loss.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        _migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _migrate(conn: Database) -> None:
    with transaction(conn, conn.lock):
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"database schema version {version} is newer than this release "
                f"supports ({SCHEMA_VERSION})"
            )
        for statement in _SCHEMA:
            conn.execute(statement)
        if version < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
