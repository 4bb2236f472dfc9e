"""`synthorg-a2a`: the node's command line.

Each command group is a module with `register(subparsers)`, which adds its parser and sets
`handler` (args -> exit code) on every leaf command; adding a group is one line in COMMANDS.
Exit codes: 0 ok, 1 not found, 2 usage, validation or configuration error; `delegate` and
`tasks` add 3 (a peer refused or failed), 4 (the task did not succeed) and 5 (gave up
following); `settings` and `peers` with `--url` add 3 (the node could not be reached, refused
the admin token, or answered unexpectedly).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from synthorg.cli import (
    audit_cmd,
    card_cmd,
    config_cmd,
    db_cmd,
    delegate_cmd,
    keys_cmd,
    peers_cmd,
    serve_cmd,
    settings_cmd,
    spec_cmd,
    status_cmd,
    tasks_cmd,
)
from synthorg.cli.common import EXIT_USAGE, CliError, CliParser, CommandGroup, Handler
from synthorg.observability.log import LOGGER_NAME
from synthorg.release import release

PROG = "synthorg-a2a"
COMMANDS: tuple[CommandGroup, ...] = (
    serve_cmd,
    status_cmd,
    peers_cmd,
    settings_cmd,
    delegate_cmd,
    tasks_cmd,
    config_cmd,
    card_cmd,
    spec_cmd,
    db_cmd,
    audit_cmd,
    keys_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    parser = CliParser(
        prog=PROG,
        description="A node of an A2A federation: allowlisted peers delegate tasks to its "
        "agents over JSON-RPC 2.0.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {release()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for group in COMMANDS:
        group.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # Commands report in their own words; node events (e.g. a card fetch that failed while
    # probing peers) are for a node's log, not the operator's terminal.
    logging.getLogger(LOGGER_NAME).addHandler(logging.NullHandler())
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors; already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handler: Handler = args.handler
    try:
        return handler(args)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `synthorg-a2a peers list | head`: the reader left. Point stdout at /dev/null so
        # the interpreter's final flush does not complain about it again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
