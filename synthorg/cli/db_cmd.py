"""`synthorg-a2a db status|migrate`: the store's schema version, and bringing it up to date.

The store is the one a node on this data dir uses: PostgreSQL when SYNTHORG_DATABASE_URL is
set (never printed), else the data dir's SQLite file. A node migrates at start too (replicas
starting together migrate once); `db migrate` does it ahead, e.g. before a rolling upgrade.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from synthorg.cli.common import (
    EXIT_OK,
    add_data_dir_option,
    data_dir,
    existing_data_dir,
    fail,
    open_local,
    print_json,
)
from synthorg.store.backend import SchemaState

if TYPE_CHECKING:
    from synthorg.cli.common import Subparsers


def register(subparsers: Subparsers) -> None:
    db = subparsers.add_parser(
        "db",
        help="the store's schema: status and migrations",
        description="The node's store (PostgreSQL when SYNTHORG_DATABASE_URL is set, else "
        "the data dir's SQLite file): its schema version, and migrating it to this release's.",
    )
    commands = db.add_subparsers(dest="db_command", metavar="COMMAND", required=True)
    status = commands.add_parser("status", help="the schema version, and what is pending")
    status.add_argument("--json", action="store_true", help="print a JSON object")
    add_data_dir_option(status)
    status.set_defaults(handler=run_status)
    migrate = commands.add_parser("migrate", help="apply the pending migrations")
    migrate.add_argument("--json", action="store_true", help="print a JSON object")
    add_data_dir_option(migrate)
    migrate.set_defaults(handler=run_migrate)


def _json(state: SchemaState) -> dict[str, object]:
    return {"backend": state.backend, "version": state.current, "latest": state.latest,
            "pending": list(state.pending)}


def _where(state: SchemaState) -> str:
    return ("PostgreSQL (SYNTHORG_DATABASE_URL)" if state.backend == "postgresql"
            else "SQLite (the data dir)")


def run_status(args: argparse.Namespace) -> int:
    directory = existing_data_dir(data_dir(args))
    with open_local(directory, migrate=False, secrets_now=False) as stores:
        state = stores.schema()
    if args.json:
        print_json(_json(state))
        return EXIT_OK
    print(f"store: {_where(state)}")
    if state.too_new:
        print(f"schema: version {state.current}, newer than this release knows "
              f"({state.latest}): run a newer release")
    elif state.pending:
        print(f"schema: version {state.current} of {state.latest}; pending: "
              + ", ".join(state.pending) + " (apply with: synthorg-a2a db migrate)")
    else:
        print(f"schema: version {state.current} (current)")
    return EXIT_OK


def run_migrate(args: argparse.Namespace) -> int:
    with open_local(data_dir(args), migrate=False, secrets_now=False) as stores:
        before = stores.schema()
        if before.too_new:
            fail(f"schema version {before.current} is newer than this release knows "
                 f"({before.latest}): run a newer release")
        after = stores.migrate()
    if args.json:
        print_json({**_json(after), "from": before.current})
    elif after.current == before.current:
        print(f"schema already at version {after.current} ({_where(after)})")
    else:
        print(f"migrated {_where(after)} from version {before.current} to {after.current}")
    return EXIT_OK
