"""Shared pieces of the `synthorg-a2a` command groups: exit codes, errors, options, stores."""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from synthorg.errors import StoreError
from synthorg.generated.models import Task
from synthorg.paths import DEFAULT_DATA_DIR, data_dir_from_env
from synthorg.store.backend import Stores
from synthorg.store.catalog import Catalog
from synthorg.store.secretbox import SecretBoxError
from synthorg.store.select import OptionsError, open_stores

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction["CliParser"]

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_USAGE = 2  # usage, validation and configuration errors, as argparse and `serve` use

Handler = Callable[[argparse.Namespace], int]


class CommandGroup(Protocol):
    """A command module: `register` adds its sub-parser(s) and sets `handler` on each."""

    def register(self, subparsers: Subparsers) -> None: ...


class CliError(Exception):
    """Reported as one `error: ...` line on stderr; `code` becomes the exit status."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


class CliParser(argparse.ArgumentParser):
    """argparse, but a usage error is one `error: ...` line (plus where to find help)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {message} (see '{self.prog} --help')\n")


def add_data_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        metavar="DIR",
        help=f"the node's data directory (default: $SYNTHORG_DATA_DIR, else {DEFAULT_DATA_DIR})",
    )


def data_dir(args: argparse.Namespace) -> Path:
    explicit: Path | None = getattr(args, "data_dir", None)
    return explicit if explicit is not None else data_dir_from_env()


def existing_data_dir(directory: Path) -> Path:
    """The data dir of a command that only reads: on SQLite one that is not there is a typo,
    reported, and not created (with a fresh key) as a command that writes would."""
    if not _shared() and not directory.is_dir():
        fail(f"no data dir {directory}")
    return directory


@contextmanager
def open_local(directory: Path, *, migrate: bool = True,
               secrets_now: bool = True) -> Iterator[Stores]:
    """The node's stores: SQLite in `directory` (created with its database and key if
    missing), or the PostgreSQL database `SYNTHORG_DATABASE_URL` names, migrated first unless
    `migrate` is false. With `secrets_now` false, the key PostgreSQL needs is read only when
    a sealed record is (never by `db status`).

    Store failures become CliErrors; their messages never carry keys, secrets or the URL."""
    try:
        stores = open_stores(directory, migrate=migrate, secrets_now=secrets_now)
    except OSError as exc:
        raise CliError(f"cannot open data directory {directory}: {exc.strerror or exc}") from None
    except (sqlite3.Error, StoreError, OptionsError) as exc:
        raise CliError(f"{_where(directory)}: {exc}") from None
    try:
        yield stores
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        raise CliError(f"{directory}: {exc.strerror or exc}") from None
    except (StoreError, sqlite3.Error) as exc:  # SecretBoxError is a StoreError
        raise CliError(str(exc)) from None
    finally:
        stores.close()


def _where(directory: Path) -> str:
    return "the database (SYNTHORG_DATABASE_URL)" if _shared() else str(directory)


def _shared() -> bool:
    try:
        from synthorg.store.select import uses_postgres

        return uses_postgres()
    except OptionsError:
        return True


@contextmanager
def open_catalog(directory: Path) -> Iterator[Catalog]:
    """The node's catalog (see `open_local`)."""
    with open_local(directory) as stores:
        try:
            yield stores.catalog
        except SecretBoxError as exc:
            raise CliError(str(exc)) from None


def task_json(task: Task) -> dict[str, Any]:
    """A Task as the JSON the wire carries."""
    return task.model_dump(mode="json", by_alias=True, exclude_none=True)


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2))


def shown(text: str) -> str:
    """`text` as typed when it is plain, else quoted, so an error stays one readable line."""
    return text if text and text.isprintable() and " " not in text else repr(text)


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    raise CliError(message, code)
