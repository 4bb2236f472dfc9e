"""The PostgreSQL schema as numbered, forward-only migrations, recorded in `schema_migrations`.

Migrations run in one transaction holding a transaction-scoped advisory lock
(`pg_advisory_xact_lock`), so replicas starting together migrate once: the first takes the
lock and migrates, the others wait for it and then find the schema current. PostgreSQL's DDL
is transactional, so a migration that fails leaves nothing half-applied. A database migrated
by a newer release than this one is refused (SchemaTooNew).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from synthorg.errors import SchemaTooNew
from synthorg.store.delegations import delegation_row_v1
from synthorg.store.postgres.database import Connection
from synthorg.store.task_codec import event_row_v1, task_row_v1
from synthorg.store.tasks import UNFINISHED_STATES

# A migration's step: an SQL statement, or a Python function given the connection, for what
# SQL cannot say (converting documents); it runs in the migration's transaction all the same.
Step = str | Callable[[Connection], Awaitable[None]]
BATCH = 500  # rows a Python step reads and writes at a time: memory stays bounded

# An arbitrary constant naming this application's migration lock (advisory locks are keyed
# by a bigint, shared by everything on the database server).
MIGRATION_LOCK = 0x5359_4E54_4F52_4701


def _revision_trigger(table: str, revision: str) -> tuple[str, ...]:
    """Every statement that changes `table`, whoever runs it (a replica, the CLI), moves its
    revision: readers compare one number to know their cached view is stale."""
    return (
        f"CREATE TRIGGER {table}_revision AFTER INSERT OR UPDATE OR DELETE ON {table} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION synthorg_bump_revision('{revision}')",
    )


_V1 = (
    """CREATE TABLE peers (
        name TEXT PRIMARY KEY,
        endpoint TEXT NOT NULL,
        scheme TEXT NOT NULL,
        secret_enc BYTEA NOT NULL,
        created_at TEXT,
        updated_at TEXT
    )""",
    """CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        peer TEXT NOT NULL,
        context_id TEXT NOT NULL,
        state TEXT NOT NULL,
        body TEXT NOT NULL,
        version BIGINT NOT NULL DEFAULT 0,
        runner TEXT,
        created_at TEXT,
        updated_at TEXT,
        seq BIGSERIAL NOT NULL
    )""",
    "CREATE INDEX tasks_peer_seq ON tasks (peer, seq)",
    "CREATE INDEX tasks_seq ON tasks (seq)",
    "CREATE INDEX tasks_unfinished ON tasks (runner) WHERE state IN ('submitted', 'working')",
    """CREATE TABLE message_keys (
        peer TEXT NOT NULL,
        message_id TEXT NOT NULL,
        digest TEXT NOT NULL,
        task_id TEXT NOT NULL,
        PRIMARY KEY (peer, message_id)
    )""",
    """CREATE TABLE delegations (
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
    "CREATE INDEX delegations_origin ON delegations (origin_task_id)",
    "CREATE INDEX delegations_created ON delegations (created_at)",
    """CREATE TABLE settings (
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        updated_at TEXT,
        PRIMARY KEY (namespace, key)
    )""",
    "CREATE TABLE revisions (name TEXT PRIMARY KEY, value BIGINT NOT NULL)",
    "INSERT INTO revisions (name, value) VALUES ('catalog', 0), ('settings', 0)",
    """CREATE FUNCTION synthorg_bump_revision() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE revisions SET value = value + 1 WHERE name = TG_ARGV[0];
        RETURN NULL;
    END $$""",
    *_revision_trigger("peers", "catalog"),
    *_revision_trigger("settings", "settings"),
    """CREATE TABLE runners (
        id TEXT PRIMARY KEY,
        started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    """CREATE TABLE audit (
        seq BIGSERIAL PRIMARY KEY,
        ts TEXT NOT NULL,
        record TEXT NOT NULL
    )""",
    "CREATE INDEX audit_ts ON audit (ts)",
    # A follow-up's key and the task write it stands for, in one statement: the key is
    # recorded unless it exists ('key'); the task is written only at the version read ('ok');
    # otherwise the statement fails and the key it inserted is undone with it.
    """CREATE FUNCTION synthorg_update_task(
        p_peer TEXT, p_id TEXT, p_version BIGINT, p_body TEXT, p_state TEXT, p_now TEXT,
        p_runner TEXT, p_message_id TEXT, p_digest TEXT
    ) RETURNS TEXT LANGUAGE plpgsql AS $$
    BEGIN
        IF p_message_id IS NOT NULL THEN
            INSERT INTO message_keys (peer, message_id, digest, task_id)
            VALUES (p_peer, p_message_id, p_digest, p_id)
            ON CONFLICT (peer, message_id) DO NOTHING;
            IF NOT FOUND THEN
                RETURN 'key';
            END IF;
        END IF;
        UPDATE tasks SET body = p_body, state = p_state, updated_at = p_now,
            version = version + 1, runner = p_runner
        WHERE id = p_id AND peer = p_peer AND version = p_version;
        IF FOUND THEN
            RETURN 'ok';
        END IF;
        RAISE EXCEPTION 'task version moved' USING ERRCODE = 'SY001';
    END $$""",
)

# v2: every task's durable, ordered event log (what streams replay and follow), written in
# the statement of the task write the events describe.
_V2 = (
    """CREATE TABLE task_events (
        task_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        peer TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (task_id, seq)
    )""",
)

# v3: a peer's own rate limit (requests per second), overriding a2a.peer_rate_limit_per_second.
_V3 = ("ALTER TABLE peers ADD COLUMN rate_limit DOUBLE PRECISION",)

# v4: push notification configs, each under the task (and the peer owning it) it belongs to.
_V4 = (
    """CREATE TABLE push_configs (
        task_id TEXT NOT NULL,
        config_id TEXT NOT NULL,
        peer TEXT NOT NULL,
        body TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (task_id, config_id)
    )""",
)

# v5: the push outbox (one row per delivery owed: a config, a status the task reached) and
# the receipts of pushes received.
_V5 = (
    """CREATE TABLE push_outbox (
        id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        config_id TEXT NOT NULL,
        status_key TEXT NOT NULL,
        body TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at DOUBLE PRECISION NOT NULL,
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
        received_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (peer, delivery_id)
    )""",
    "CREATE INDEX push_receipts_age ON push_receipts (received_at)",
)

# v6: per-peer rate-limit buckets, shared by every replica (tokens taken in leases). Unlogged:
# a take commits without waiting for a WAL flush, and a crash only refills every bucket.
_V6 = (
    """CREATE UNLOGGED TABLE rate_buckets (
        peer TEXT PRIMARY KEY,
        tokens DOUBLE PRECISION NOT NULL,
        ts DOUBLE PRECISION NOT NULL,
        granted INTEGER NOT NULL
    )""",
)

# v7: push housekeeping. Each config remembers the last status enqueued for it, so finished
# outbox rows can be pruned without a sweep enqueueing their status again; finished rows are
# found by age through their own index; a push received finds its delegation by the peer's
# task id through an index rather than a scan of recent records.
_V7 = (
    "ALTER TABLE push_configs ADD COLUMN last_status_key TEXT",
    """UPDATE push_configs c SET last_status_key = (
        SELECT o.status_key FROM push_outbox o
        WHERE o.task_id = c.task_id AND o.config_id = c.config_id
        ORDER BY o.created_at DESC, o.next_at DESC LIMIT 1
    )""",
    "CREATE INDEX push_outbox_finished ON push_outbox (next_at) WHERE outcome IS NOT NULL",
    "CREATE INDEX delegations_remote ON delegations (peer, remote_task_id)",
)

# v8: the version of the task each config's last status was read at, so a status read
# before a newer one was enqueued (two enqueues overlapping) is not enqueued after it. Configs
# from before hold none: the next status enqueued for them sets it.
_V8 = ("ALTER TABLE push_configs ADD COLUMN last_status_version BIGINT",)

# v9: the key that must sign a peer's cards (a public JWK, or a JWKS URL with a pinned
# thumbprint); NULL: the peer's cards are accepted unverified.
_V9 = ("ALTER TABLE peers ADD COLUMN card_key TEXT",)

# v10: the operator console's sessions, shared by every replica: each by a SHA-256 digest of
# its id (never the id), with its wall-clock creation and expiry.
_V10 = (
    """CREATE TABLE console_sessions (
        key TEXT PRIMARY KEY,
        created_at DOUBLE PRECISION NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL
    )""",
    "CREATE INDEX console_sessions_expiry ON console_sessions (expires_at)",
)

# v11: a change to the catalog or the settings is also announced, by the same trigger, on
# REVISIONS_CHANNEL as "<name> <new revision>". NOTIFY is part of the writer's transaction:
# sent at its commit, never for a rollback, whoever writes (a replica, the CLI, an operator's
# SQL), so replicas that listen learn of every change without asking (`revisions.py`).
REVISIONS_CHANNEL = "synthorg_revisions"
_V11 = (
    f"""CREATE OR REPLACE FUNCTION synthorg_bump_revision() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
        moved BIGINT;
    BEGIN
        UPDATE revisions SET value = value + 1 WHERE name = TG_ARGV[0]
        RETURNING value INTO moved;
        PERFORM pg_notify('{REVISIONS_CHANNEL}', TG_ARGV[0] || ' ' || moved);
        RETURN NULL;
    END $$""",
)

# v12: the binding calls to a peer are made in (JSONRPC, HTTP+JSON, GRPC; NULL: the peer's
# card decides), and the one each delegation was sent in, which its follow-ups, cancel, stream
# and push requests keep (NULL: JSON-RPC, as every delegation before was sent).
_V12 = (
    "ALTER TABLE peers ADD COLUMN binding TEXT",
    "ALTER TABLE delegations ADD COLUMN binding TEXT",
)


async def _tasks_to_v1(conn: Connection) -> None:
    """Every task row's body and state in A2A 1.0's form (see synthorg.store.task_codec)."""
    after = 0
    while rows := await conn.fetch(
        "SELECT seq, id, body, state FROM tasks WHERE seq > $1 ORDER BY seq LIMIT $2",
        after, BATCH,
    ):
        after = rows[-1][0]
        converted = [(task_id, *row_v1) for _, task_id, body, state in rows
                     if (row_v1 := task_row_v1(body, state)) is not None]
        await conn.executemany("UPDATE tasks SET body = $2, state = $3 WHERE id = $1",
                               converted)


async def _events_to_v1(conn: Connection) -> None:
    """Every logged event as an A2A 1.0 StreamResponse."""
    after: tuple[str, int] = ("", -1)
    while rows := await conn.fetch(
        "SELECT task_id, seq, body FROM task_events WHERE (task_id, seq) > ($1, $2) "
        "ORDER BY task_id, seq LIMIT $3", *after, BATCH,
    ):
        after = (rows[-1][0], rows[-1][1])
        converted = [(task_id, seq, body_v1) for task_id, seq, body in rows
                     if (body_v1 := event_row_v1(body)) is not None]
        await conn.executemany(
            "UPDATE task_events SET body = $3 WHERE task_id = $1 AND seq = $2", converted
        )


_UNFINISHED = ", ".join(f"'{state}'" for state in UNFINISHED_STATES)

# v13: tasks and their logged events are kept as A2A 1.0 documents, states by 1.0's names
# (TASK_STATE_WORKING); the rows written before are converted, and the index of unfinished
# tasks names the new states. One-way: an older release refuses the upgraded store.
_V13: tuple[Step, ...] = (
    "DROP INDEX tasks_unfinished",
    _tasks_to_v1,
    _events_to_v1,
    f"CREATE INDEX tasks_unfinished ON tasks (runner) WHERE state IN ({_UNFINISHED})",
)


async def _delegations_to_v1(conn: Connection) -> None:
    """Every delegation row's task and state in A2A 1.0's form (synthorg.store.delegations)."""
    after = ""
    while rows := await conn.fetch(
        "SELECT id, body, state FROM delegations WHERE id > $1 ORDER BY id LIMIT $2",
        after, BATCH,
    ):
        after = rows[-1][0]
        converted = [(local_id, *row_v1) for local_id, body, state in rows
                     if (row_v1 := delegation_row_v1(body, state)) is not None]
        await conn.executemany("UPDATE delegations SET body = $2, state = $3 WHERE id = $1",
                               converted)


# v14: delegation records keep the downstream task as the A2A 1.0 document, its state by
# 1.0's name; the rows written before are converted. One-way, as v13.
_V14: tuple[Step, ...] = (_delegations_to_v1,)

MIGRATIONS: tuple[tuple[str, tuple[Step, ...]], ...] = (
    ("shared store: catalog, tasks, keys, delegations, settings, runners, audit", _V1),
    ("task event log", _V2),
    ("per-peer rate limit", _V3),
    ("push notification configs", _V4),
    ("push outbox and receipts", _V5),
    ("shared rate-limit buckets", _V6),
    ("push housekeeping: last status per config, finished outbox rows, delegations by remote "
     "task", _V7),
    ("push status order: the task version of each config's last status", _V8),
    ("pinned card keys", _V9),
    ("console sessions", _V10),
    ("catalog and settings changes announced (NOTIFY) with their revision", _V11),
    ("the binding of each peer and each delegation", _V12),
    ("tasks and their logged events as A2A 1.0 documents", _V13),
    ("delegation records as A2A 1.0 documents", _V14),
)
SCHEMA_VERSION = len(MIGRATIONS)
VERSION_CONFLICT_STATE = "SY001"  # raised by synthorg_update_task on a moved version

_CREATE_LEDGER = """CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)"""


@dataclass(frozen=True)
class SchemaStatus:
    current: int  # the version the database is at (0: empty)
    latest: int  # the version this release knows

    @property
    def pending(self) -> list[str]:
        return [f"{i + 1}: {name}" for i, (name, _) in enumerate(MIGRATIONS)][self.current:]

    @property
    def too_new(self) -> bool:
        return self.current > self.latest


def too_new_message(found: int) -> str:
    return (f"database schema version {found} is newer than this release supports "
            f"({SCHEMA_VERSION}); run a newer release")


async def current_version(conn: Connection) -> int:
    """The database's version without changing anything (0 before the first migration)."""
    exists = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
    if not exists:
        return 0
    found = await conn.fetchval("SELECT coalesce(max(version), 0) FROM schema_migrations")
    return int(found)


async def status(conn: Connection) -> SchemaStatus:
    return SchemaStatus(await current_version(conn), SCHEMA_VERSION)


async def migrate(conn: Connection) -> tuple[int, int]:
    """Bring the schema to SCHEMA_VERSION under the migration lock; (found, now)."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
        await conn.execute(_CREATE_LEDGER)
        found = await current_version(conn)
        if found > SCHEMA_VERSION:
            raise SchemaTooNew(too_new_message(found))
        for number, (name, steps) in enumerate(MIGRATIONS[found:], start=found + 1):
            for step in steps:
                if isinstance(step, str):
                    await conn.execute(step)
                else:
                    await step(conn)
            await conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", number, name
            )
    return found, SCHEMA_VERSION
