"""Which store a node, a replica or the CLI uses: PostgreSQL when `SYNTHORG_DATABASE_URL` is
set (its replicas share it), else SQLite in the data dir, as before.

The URL may hold a password: it is read from the environment only, and never logged.
"""

from __future__ import annotations

import os
from pathlib import Path

from synthorg.store.backend import Stores
from synthorg.store.postgres.options import OptionsError, options_from
from synthorg.store.secretbox import SecretBox
from synthorg.store.tasks import DEFAULT_LEASE_SECONDS, Runner

__all__ = ["OptionsError", "open_stores", "runner_from_env", "uses_postgres"]

LEASE_ENV = "SYNTHORG_RUNNER_LEASE_SECONDS"


def runner_from_env() -> Runner:
    """A new runner (this process), its lease from `SYNTHORG_RUNNER_LEASE_SECONDS`: how long
    after its last heartbeat a runner that vanished (kill -9, a lost machine) counts as gone,
    and its unfinished tasks are failed by a live replica."""
    raw = os.environ.get(LEASE_ENV, "").strip()
    if not raw:
        return Runner(lease_seconds=DEFAULT_LEASE_SECONDS)
    try:
        lease = float(raw)
    except ValueError:
        lease = -1.0
    if not 1.0 <= lease <= 3600.0:
        raise OptionsError(f"{LEASE_ENV} must be a number of seconds from 1 to 3600; got {raw!r}")
    return Runner(lease_seconds=lease)


def uses_postgres() -> bool:
    return options_from() is not None


def open_stores(data_dir: Path, runner: Runner | None = None, *, migrate: bool = True,
                secrets_now: bool = True) -> Stores:
    """The node's stores. SQLite opens (and, with `migrate`, migrates) at once; PostgreSQL
    connects at first use, where `migrate` then means: migrate before returning, blocking
    (the CLI's way; a node migrates in `Stores.start`). Raises OptionsError for unusable
    database settings, SecretBoxError without the shared key PostgreSQL needs (at once, or
    with `secrets_now` false at the first use of a sealed record)."""
    options = options_from()
    if options is None:
        from synthorg.store.sqlite.backend import SqliteStores

        return SqliteStores(data_dir, runner, migrate_now=migrate)
    from synthorg.store.postgres.backend import PgStores

    def box() -> SecretBox:
        return SecretBox.for_data_dir(data_dir, shared_store=True)

    stores = PgStores(options, box() if secrets_now else box, runner)
    if migrate:
        try:
            stores.migrate()
        except BaseException:
            stores.close()
            raise
    return stores
