"""The SQLite stores of one data dir, as one bundle (`synthorg.store.backend.Stores`)."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from synthorg.store.backend import BackendName, SchemaState
from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.audit import SqliteAuditStore
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.console_sessions import SqliteConsoleSessions
from synthorg.store.sqlite.database import Database, open_database
from synthorg.store.sqlite.delegations import SqliteDelegationStore
from synthorg.store.sqlite.push import SqlitePushConfigStore, SqlitePushOutbox, SqlitePushReceipts
from synthorg.store.sqlite.ratebuckets import SqliteRateBuckets
from synthorg.store.sqlite.revisions import Revisions, request_scope
from synthorg.store.sqlite.schema import SCHEMA_VERSION, migrate, version
from synthorg.store.sqlite.settings import SqliteSettingsStore
from synthorg.store.sqlite.tasks import SqliteTaskStore
from synthorg.store.tasks import Runner


class SqliteStores:
    backend: BackendName = "sqlite"
    shared = False

    def __init__(self, data_dir: Path, runner: Runner | None = None, *,
                 migrate_now: bool = True) -> None:
        self.data_dir = Path(data_dir)
        self.db: Database = open_database(self.data_dir, migrate_now=migrate_now)
        self.runner = runner or Runner()
        self._revisions = Revisions(self.db)

    @cached_property
    def box(self) -> SecretBox:
        # Built at first use: the key file is created only by what needs it.
        return SecretBox.for_data_dir(self.data_dir)

    @cached_property
    def catalog(self) -> SqliteCatalog:
        return SqliteCatalog(self.db, self.box, self._revisions)

    @cached_property
    def tasks(self) -> SqliteTaskStore:
        return SqliteTaskStore(self.db, self.runner)

    @cached_property
    def delegations(self) -> SqliteDelegationStore:
        return SqliteDelegationStore(self.db)

    @cached_property
    def push_configs(self) -> SqlitePushConfigStore:
        return SqlitePushConfigStore(self.db)

    @cached_property
    def push_outbox(self) -> SqlitePushOutbox:
        return SqlitePushOutbox(self.db)

    @cached_property
    def push_receipts(self) -> SqlitePushReceipts:
        return SqlitePushReceipts(self.db)

    @cached_property
    def settings(self) -> SqliteSettingsStore:
        return SqliteSettingsStore(self.db, self._revisions)

    @cached_property
    def rate_buckets(self) -> SqliteRateBuckets:
        # A file of its own beside the node's, opened at the first take.
        return SqliteRateBuckets(self.data_dir)

    @cached_property
    def audit(self) -> SqliteAuditStore:
        return SqliteAuditStore(self.db)

    @cached_property
    def console_sessions(self) -> SqliteConsoleSessions:
        return SqliteConsoleSessions(self.db)

    async def request_started(self) -> None:
        request_scope()

    async def start(self) -> tuple[int, int]:
        found = self.db.migrated_from
        if found is None:
            found = self.db.write_blocking(migrate)
        return found, SCHEMA_VERSION

    async def ready(self) -> bool:
        try:  # a PRAGMA on the reader: microseconds, on the loop like every read
            return self._current() == SCHEMA_VERSION
        except Exception:
            return False

    async def schema_versions(self) -> tuple[int, int]:
        return self._current(), SCHEMA_VERSION

    def _current(self) -> int:
        return version(self.db.reader)

    def schema(self) -> SchemaState:
        current = self._current()
        pending = tuple(f"{n}" for n in range(current + 1, SCHEMA_VERSION + 1))
        return SchemaState("sqlite", current, SCHEMA_VERSION, pending)

    def migrate(self) -> SchemaState:
        self.db.write_blocking(migrate)
        return self.schema()

    def close(self) -> None:
        if "rate_buckets" in self.__dict__:
            self.rate_buckets.close()
        self.db.close()
