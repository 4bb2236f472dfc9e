"""The PostgreSQL stores, as one bundle (`synthorg.store.backend.Stores`), shared by every
replica of a node. Nothing connects until the first use: a node can listen, and answer
/readyz with 503, while the database is not there yet."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

from synthorg.store.backend import BackendName, SchemaState
from synthorg.store.postgres import schema
from synthorg.store.postgres.audit import PgAuditStore
from synthorg.store.postgres.catalog import PgCatalog
from synthorg.store.postgres.console_sessions import PgConsoleSessions
from synthorg.store.postgres.database import Connection, PgDatabase
from synthorg.store.postgres.delegations import PgDelegationStore
from synthorg.store.postgres.options import PgOptions
from synthorg.store.postgres.push import PgPushConfigStore, PgPushOutbox, PgPushReceipts
from synthorg.store.postgres.ratebuckets import PgRateBuckets
from synthorg.store.postgres.revisions import PgRevisions
from synthorg.store.postgres.settings import PgSettingsStore
from synthorg.store.postgres.tasks import PgTaskStore
from synthorg.store.secretbox import SecretBox
from synthorg.store.tasks import Runner


class PgStores:
    backend: BackendName = "postgresql"
    shared = True

    def __init__(self, options: PgOptions, box: SecretBox | Callable[[], SecretBox],
                 runner: Runner | None = None) -> None:
        self.db = PgDatabase(options)
        self.runner = runner or Runner()
        self.revisions = PgRevisions(self.db)
        # A callable is asked at first use: what reads no peer record (`db status`) needs
        # no key.
        self._box = box
        self.tasks = PgTaskStore(self.db, self.runner)
        self.delegations = PgDelegationStore(self.db)
        self.settings = PgSettingsStore(self.db, self.revisions)
        self.push_configs = PgPushConfigStore(self.db)
        self.push_outbox = PgPushOutbox(self.db)
        self.push_receipts = PgPushReceipts(self.db)
        self.audit = PgAuditStore(self.db)
        self.rate_buckets = PgRateBuckets(self.db)
        self.console_sessions = PgConsoleSessions(self.db)

    def __repr__(self) -> str:
        return "PgStores(<url redacted>)"

    @cached_property
    def box(self) -> SecretBox:
        return self._box if isinstance(self._box, SecretBox) else self._box()

    @cached_property
    def catalog(self) -> PgCatalog:
        return PgCatalog(self.db, self.box, self.revisions)

    async def request_started(self) -> None:
        await self.revisions.request_started()

    async def start(self) -> tuple[int, int]:
        return await self.db.run(schema.migrate, "migrate")

    async def ready(self) -> bool:
        async def current(conn: Connection) -> int:
            return await schema.current_version(conn)

        try:
            found = await self.db.run(current, "readiness check")
        except Exception:
            return False
        return found == schema.SCHEMA_VERSION

    async def schema_versions(self) -> tuple[int, int]:
        return await self.db.run(schema.current_version, "schema version"), schema.SCHEMA_VERSION

    def schema(self) -> SchemaState:
        found = self.db.blocking(lambda db: db.run(schema.status, "schema status"))
        return SchemaState("postgresql", found.current, found.latest, tuple(found.pending))

    def migrate(self) -> SchemaState:
        self.db.blocking(lambda db: db.run(schema.migrate, "migrate"))
        return self.schema()

    def close(self) -> None:
        self.revisions.close()
        self.db.close()
