"""`synthorg-a2a serve`: run this node, as `python -m synthorg.api` does."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from synthorg.api.serve import DEFAULT_HOST, DEFAULT_PORT, serve
from synthorg.cli.common import add_data_dir_option, data_dir, fail

if TYPE_CHECKING:
    from synthorg.cli.common import Subparsers

HOST_ENV = "SYNTHORG_BACKEND_HOST"
PORT_ENV = "SYNTHORG_BACKEND_PORT"


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run this node",
        description="Run this node: the A2A JSON-RPC endpoint at /api/v1/a2a/. "
        "Options override the environment.",
    )
    add_data_dir_option(parser)
    parser.add_argument("--host", metavar="HOST",
                        help=f"bind address (default: ${HOST_ENV}, else {DEFAULT_HOST})")
    parser.add_argument("--port", type=_port, metavar="PORT",
                        help=f"TCP port, 0 for any free one (default: ${PORT_ENV}, "
                        f"else {DEFAULT_PORT})")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    host: str = args.host or os.environ.get(HOST_ENV) or DEFAULT_HOST
    port: int = args.port if args.port is not None else _env_port()
    return serve(data_dir(args), host, port)


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return int(text)


def _env_port() -> int:
    raw = os.environ.get(PORT_ENV) or str(DEFAULT_PORT)
    try:
        return _port(raw)
    except argparse.ArgumentTypeError as exc:
        fail(f"{PORT_ENV}: {exc}")
