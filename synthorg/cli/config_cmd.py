"""`synthorg-a2a config check [FILE]`: report every problem in a company YAML at once."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from synthorg.cli.common import EXIT_OK, EXIT_USAGE, add_data_dir_option, data_dir, fail
from synthorg.config.check import check_file
from synthorg.config.company import CONFIG_FILE

if TYPE_CHECKING:
    from synthorg.cli.common import Subparsers


def register(subparsers: Subparsers) -> None:
    group = subparsers.add_parser("config", help="check the company YAML")
    commands = group.add_subparsers(dest="config_command", metavar="COMMAND", required=True)
    check = commands.add_parser(
        "check",
        help="report every problem in a config file, with line numbers",
        description="Validate a company YAML against the config schema in spec/ and the "
        "node's own rules; every problem is reported, one line each, as FILE:LINE: KEY: "
        "PROBLEM. Exit 0 when the file is valid, 2 otherwise.",
    )
    check.add_argument(
        "file", nargs="?", type=Path, help=f"the file (default: the data dir's {CONFIG_FILE})"
    )
    add_data_dir_option(check)
    check.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    path: Path = args.file or data_dir(args) / CONFIG_FILE
    if not path.exists():
        fail(f"{path}: no such file")
    findings = check_file(path)
    for finding in findings:
        print(finding.render(str(path)), file=sys.stderr)
    if findings:
        print(f"{len(findings)} problem(s) in {path}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{path}: ok")
    return EXIT_OK
