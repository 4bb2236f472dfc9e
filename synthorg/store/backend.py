"""Everything the node keeps, as one bundle of store interfaces, whichever engine holds it.

Two implementations: SQLite in the data dir (`synthorg.store.sqlite.backend`, the embedded
default, one machine) and PostgreSQL (`synthorg.store.postgres.backend`, shared by replicas).
`synthorg.store.select` picks one; nothing above the stores knows which runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from synthorg.store.audit import AuditStore
from synthorg.store.catalog import Catalog
from synthorg.store.console_sessions import ConsoleSessionStore
from synthorg.store.delegations import DelegationStore
from synthorg.store.push import PushConfigStore, PushOutbox, PushReceipts
from synthorg.store.ratebuckets import RateBuckets
from synthorg.store.secretbox import SecretBox
from synthorg.store.settings import SettingsStore
from synthorg.store.tasks import TaskStore

BackendName = Literal["sqlite", "postgresql"]


@dataclass(frozen=True)
class SchemaState:
    backend: BackendName
    current: int  # the version the store is at (0: empty)
    latest: int  # the version this release knows
    pending: tuple[str, ...]  # migrations this release would apply, "N: what"

    @property
    def too_new(self) -> bool:
        return self.current > self.latest


class Stores(Protocol):
    @property
    def backend(self) -> BackendName: ...

    @property
    def shared(self) -> bool:
        """True when other machines may serve the same store (replicas)."""
        ...

    @property
    def catalog(self) -> Catalog: ...

    @property
    def tasks(self) -> TaskStore: ...

    @property
    def delegations(self) -> DelegationStore: ...

    @property
    def box(self) -> SecretBox:
        """The node's key for secrets at rest (link secrets, push config secrets)."""
        ...

    @property
    def push_configs(self) -> PushConfigStore: ...

    @property
    def push_outbox(self) -> PushOutbox: ...

    @property
    def push_receipts(self) -> PushReceipts: ...

    @property
    def settings(self) -> SettingsStore: ...

    @property
    def rate_buckets(self) -> RateBuckets:
        """The per-peer rate-limit buckets every process serving this store shares."""
        ...

    @property
    def audit(self) -> AuditStore: ...

    @property
    def console_sessions(self) -> ConsoleSessionStore:
        """The operator console's sessions, seen by every process serving this store."""
        ...

    async def request_started(self) -> None:
        """A request starts: read the change counters once, refresh what they invalidate."""
        ...

    async def start(self) -> tuple[int, int]:
        """Reach the store and migrate it (once, whoever else starts); (found, now).
        StoreUnavailable while it cannot be reached, SchemaTooNew for a newer schema."""
        ...

    async def ready(self) -> bool:
        """The store answers and its schema is the one this release knows."""
        ...

    def schema(self) -> SchemaState:
        """Where the schema stands, changing nothing."""
        ...

    async def schema_versions(self) -> tuple[int, int]:
        """(the store's schema version now, the one this release knows), asked from the loop
        that serves; StoreError when the store cannot be reached."""
        ...

    def migrate(self) -> SchemaState:
        """Apply the pending migrations (from a blocking caller, e.g. the CLI)."""
        ...

    def close(self) -> None: ...
