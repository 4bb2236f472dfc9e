"""The SQLite schema as numbered, forward-only migrations (`PRAGMA user_version`).

Each migration runs in the transaction that opens the database for writing (BEGIN IMMEDIATE),
so processes starting together migrate once: the first takes the lock and migrates, the
others then find the version current. A database newer than this release is refused.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from synthorg.errors import SchemaTooNew
from synthorg.store.delegations import delegation_row_v1
from synthorg.store.task_codec import event_row_v1, task_row_v1

# A migration's step: an SQL statement, or a Python function given the connection, for what
# SQL cannot say (converting documents); it runs in the migration's transaction all the same.
Step = str | Callable[[sqlite3.Connection], None]
BATCH = 500  # rows a Python step reads and writes at a time: memory stays bounded

_V1 = (
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


def _revision_triggers(table: str, revision: str) -> tuple[str, ...]:
    """Every change to `table`, by any writer (a node, the CLI), moves its revision."""
    return tuple(
        f"CREATE TRIGGER IF NOT EXISTS {table}_{event.lower()}_revision AFTER {event} ON {table} "
        f"BEGIN UPDATE revisions SET value = value + 1 WHERE name = '{revision}'; END"
        for event in ("INSERT", "UPDATE", "DELETE")
    )


# v2: a version per task for compare-and-set writes across processes, and revision counters
# that readers poll cheaply to know when their cached catalog or settings went stale.
_V2 = (
    "ALTER TABLE tasks ADD COLUMN version INTEGER NOT NULL DEFAULT 0",
    "CREATE TABLE revisions (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "INSERT INTO revisions (name, value) VALUES ('catalog', 0), ('settings', 0)",
    *_revision_triggers("peers", "catalog"),
    *_revision_triggers("settings", "settings"),
)

# v3: the audit trail moves from audit.log into the store; every unfinished task names the
# runner (process) that runs it, and runners hold a lease, so recovery fails only the tasks
# of runners that are gone.
_V3 = (
    """CREATE TABLE audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        ts TEXT NOT NULL,
        record TEXT NOT NULL
    )""",
    "CREATE INDEX audit_ts ON audit (ts)",
    "ALTER TABLE tasks ADD COLUMN runner TEXT",
    "CREATE INDEX tasks_unfinished ON tasks (state, runner)",
    """CREATE TABLE runners (
        id TEXT PRIMARY KEY,
        started_at REAL NOT NULL,
        heartbeat_at REAL NOT NULL
    )""",
)

# v4: every task's durable, ordered event log (what streams replay and follow); a task's
# events are written in the transaction of the task write they describe.
_V4 = (
    """CREATE TABLE task_events (
        task_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        peer TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (task_id, seq)
    ) WITHOUT ROWID""",
)

# v5: a peer's own rate limit (requests per second), overriding a2a.peer_rate_limit_per_second.
_V5 = ("ALTER TABLE peers ADD COLUMN rate_limit REAL",)

# v6: push notification configs, each under the task (and the peer owning it) it belongs to.
_V6 = (
    """CREATE TABLE push_configs (
        task_id TEXT NOT NULL,
        config_id TEXT NOT NULL,
        peer TEXT NOT NULL,
        body TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (task_id, config_id)
    ) WITHOUT ROWID""",
)

# v7: the push outbox (one row per delivery owed: a config, a status the task reached) and
# the receipts of pushes received.
_V7 = (
    """CREATE TABLE push_outbox (
        id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        config_id TEXT NOT NULL,
        status_key TEXT NOT NULL,
        body TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at REAL NOT NULL,
        outcome TEXT,
        last_error TEXT,
        created_at TEXT NOT NULL,
        UNIQUE (task_id, config_id, status_key)
    )""",
    "CREATE INDEX push_outbox_due ON push_outbox (next_at) WHERE outcome IS NULL",
    # the delivery ids of verified pushes received, per peer (replays are refused)
    """CREATE TABLE push_receipts (
        peer TEXT NOT NULL,
        delivery_id TEXT NOT NULL,
        received_at REAL NOT NULL,
        PRIMARY KEY (peer, delivery_id)
    )""",
    "CREATE INDEX push_receipts_age ON push_receipts (received_at)",
)

# v8: push housekeeping. Each config remembers the last status enqueued for it, so finished
# outbox rows can be pruned without a sweep enqueueing their status again; finished rows are
# found by age through their own index; a push received finds its delegation by the peer's
# task id through an index rather than a scan of recent records.
_V8 = (
    "ALTER TABLE push_configs ADD COLUMN last_status_key TEXT",
    """UPDATE push_configs SET last_status_key = (
        SELECT o.status_key FROM push_outbox o
        WHERE o.task_id = push_configs.task_id AND o.config_id = push_configs.config_id
        ORDER BY o.created_at DESC, o.rowid DESC LIMIT 1
    )""",
    "CREATE INDEX push_outbox_finished ON push_outbox (next_at) WHERE outcome IS NOT NULL",
    "CREATE INDEX delegations_remote ON delegations (peer, remote_task_id)",
)

# v9: the version of the task each config's last status was read at, so a status read
# before a newer one was enqueued (two enqueues overlapping) is not enqueued after it. Configs
# from before hold none: the next status enqueued for them sets it.
_V9 = ("ALTER TABLE push_configs ADD COLUMN last_status_version INTEGER",)

# v10: the key that must sign a peer's cards (a public JWK, or a JWKS URL with a pinned
# thumbprint); NULL: the peer's cards are accepted unverified.
_V10 = ("ALTER TABLE peers ADD COLUMN card_key TEXT",)

# v11: the operator console's sessions, shared by the node's workers: each by a SHA-256 digest
# of its id (never the id), with its wall-clock creation and expiry.
_V11 = (
    """CREATE TABLE console_sessions (
        key TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        expires_at REAL NOT NULL
    ) WITHOUT ROWID""",
    "CREATE INDEX console_sessions_expiry ON console_sessions (expires_at)",
)

# v12: the binding calls to a peer are made in (JSONRPC, HTTP+JSON, GRPC; NULL: the peer's
# card decides), and the one each delegation was sent in, which its follow-ups, cancel, stream
# and push requests keep (NULL: JSON-RPC, as every delegation before was sent).
_V12 = (
    "ALTER TABLE peers ADD COLUMN binding TEXT",
    "ALTER TABLE delegations ADD COLUMN binding TEXT",
)



def _tasks_to_v1(conn: sqlite3.Connection) -> None:
    """Every task row's body and state in A2A 1.0's form (see synthorg.store.task_codec)."""
    after = 0
    while rows := conn.execute(
        "SELECT rowid, body, state FROM tasks WHERE rowid > ? ORDER BY rowid LIMIT ?",
        (after, BATCH),
    ).fetchall():
        after = rows[-1][0]
        converted = [(*row_v1, rowid) for rowid, body, state in rows
                     if (row_v1 := task_row_v1(body, state)) is not None]
        conn.executemany("UPDATE tasks SET body = ?, state = ? WHERE rowid = ?", converted)


def _events_to_v1(conn: sqlite3.Connection) -> None:
    """Every logged event as an A2A 1.0 StreamResponse."""
    after: tuple[str, int] = ("", -1)
    while rows := conn.execute(
        "SELECT task_id, seq, body FROM task_events WHERE (task_id, seq) > (?, ?) "
        "ORDER BY task_id, seq LIMIT ?",
        (*after, BATCH),
    ).fetchall():
        after = (rows[-1][0], rows[-1][1])
        converted = [(body_v1, task_id, seq) for task_id, seq, body in rows
                     if (body_v1 := event_row_v1(body)) is not None]
        conn.executemany("UPDATE task_events SET body = ? WHERE task_id = ? AND seq = ?",
                         converted)


# v13: tasks and their logged events are kept as A2A 1.0 documents, states by 1.0's names
# (TASK_STATE_WORKING); the rows written before are converted. One-way: an older release
# refuses the upgraded store (its schema is newer).
_V13: tuple[Step, ...] = (_tasks_to_v1, _events_to_v1)


def _delegations_to_v1(conn: sqlite3.Connection) -> None:
    """Every delegation row's task and state in A2A 1.0's form (synthorg.store.delegations)."""
    after = 0
    while rows := conn.execute(
        "SELECT rowid, body, state FROM delegations WHERE rowid > ? ORDER BY rowid LIMIT ?",
        (after, BATCH),
    ).fetchall():
        after = rows[-1][0]
        converted = [(*row_v1, rowid) for rowid, body, state in rows
                     if (row_v1 := delegation_row_v1(body, state)) is not None]
        conn.executemany("UPDATE delegations SET body = ?, state = ? WHERE rowid = ?", converted)


# v14: delegation records keep the downstream task as the A2A 1.0 document, its state by
# 1.0's name; the rows written before are converted. One-way, as v13.
_V14: tuple[Step, ...] = (_delegations_to_v1,)

MIGRATIONS: tuple[tuple[Step, ...], ...] = (
    _V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _V9, _V10, _V11, _V12, _V13, _V14,
)
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema to SCHEMA_VERSION inside the caller's write transaction.

    Returns the version found. A database at version 0 with tables already present (written
    by a release before versions were counted) takes v1's `IF NOT EXISTS` statements as no-ops.
    """
    found = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if found > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"database schema version {found} is newer than this release supports "
            f"({SCHEMA_VERSION}); run a newer release"
        )
    for steps in MIGRATIONS[found:]:
        for step in steps:
            if isinstance(step, str):
                conn.execute(step)
            else:
                step(conn)
    if found < SCHEMA_VERSION:
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    return found


def version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])
