"""`synthorg-a2a serve`: run this node, as `python -m synthorg.api` does."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from synthorg.api.serve import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    MAX_WORKERS,
    WORKERS_ENV,
    serve,
    workers_from,
)
from synthorg.cli.common import (
    EXIT_USAGE,
    CliError,
    CliParser,
    add_data_dir_option,
    data_dir,
    fail,
)
from synthorg.http.numbers import ascii_int

if TYPE_CHECKING:
    from synthorg.cli.common import Subparsers

HOST_ENV = "SYNTHORG_BACKEND_HOST"
PORT_ENV = "SYNTHORG_BACKEND_PORT"


DESCRIPTION = ("Run this node: the A2A JSON-RPC endpoint at /api/v1/a2a/. "
               "Options override the environment.")


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("serve", help="run this node", description=DESCRIPTION)
    add_options(parser)
    parser.set_defaults(handler=run)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m synthorg.api`: the options of `serve`, parsed the same way."""
    parser = CliParser(prog="python -m synthorg.api", description=DESCRIPTION)
    add_options(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help and usage errors; already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return run(args)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code


def add_options(parser: argparse.ArgumentParser) -> None:
    add_data_dir_option(parser)
    parser.add_argument("--host", metavar="HOST",
                        help=f"bind address (default: ${HOST_ENV}, else {DEFAULT_HOST})")
    parser.add_argument("--port", type=_port, metavar="PORT",
                        help=f"TCP port, 0 for any free one (default: ${PORT_ENV}, "
                        f"else {DEFAULT_PORT})")
    parser.add_argument("--workers", type=_workers, metavar="N",
                        help=f"worker processes sharing the port and the data dir, 1-{MAX_WORKERS} "
                        f"(default: ${WORKERS_ENV}, else 1)")


def run(args: argparse.Namespace) -> int:
    host: str = args.host or os.environ.get(HOST_ENV) or DEFAULT_HOST
    port: int = args.port if args.port is not None else _env_port()
    workers: int = args.workers if args.workers is not None else _env_workers()
    return serve(data_dir(args), host, port, workers)


def _port(text: str) -> int:
    port = ascii_int(text, 5)
    if port is None or port > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return port


def _workers(text: str) -> int:
    try:
        return workers_from(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _env_workers() -> int:
    try:
        return workers_from(os.environ.get(WORKERS_ENV))
    except ValueError as exc:
        fail(f"{WORKERS_ENV}: {exc}")


def _env_port() -> int:
    raw = os.environ.get(PORT_ENV) or str(DEFAULT_PORT)
    try:
        return _port(raw)
    except argparse.ArgumentTypeError as exc:
        fail(f"{PORT_ENV}: {exc}")
