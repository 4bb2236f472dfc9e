"""Shared pieces of the `synthorg-a2a` command groups: exit codes, errors, options, stores."""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from synthorg.generated.models import Task
from synthorg.paths import DEFAULT_DATA_DIR, data_dir_from_env
from synthorg.store.secretbox import SecretBox, SecretBoxError
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import open_database
from synthorg.store.sqlite.schema import SchemaVersionError

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


@contextmanager
def open_catalog(directory: Path) -> Iterator[SqliteCatalog]:
    """The data dir's catalog (creating the directory, database and key if missing).

    Store failures become CliErrors; their messages never carry keys or secrets."""
    try:
        db = open_database(directory)
    except OSError as exc:
        raise CliError(f"cannot open data directory {directory}: {exc.strerror or exc}") from None
    except (sqlite3.Error, SchemaVersionError) as exc:
        raise CliError(f"{directory}: {exc}") from None
    try:
        box = SecretBox.for_data_dir(directory)
        yield SqliteCatalog(db, box)
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        raise CliError(f"{directory}: {exc.strerror or exc}") from None
    except (SecretBoxError, sqlite3.Error) as exc:
        raise CliError(str(exc)) from None
    finally:
        db.close()


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
