"""`synthorg-a2a audit list`: the audit trail, every change to a runtime setting or a peer
record, from every replica, the admin API and the CLI, oldest first."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from synthorg.cli.common import (
    EXIT_OK,
    add_data_dir_option,
    data_dir,
    existing_data_dir,
    open_local,
    print_json,
)

if TYPE_CHECKING:
    from synthorg.cli.common import Subparsers

_SHOWN = ("key", "peer")


def register(subparsers: Subparsers) -> None:
    audit = subparsers.add_parser(
        "audit",
        help="read the audit trail (changes to settings and peers)",
        description="The audit trail in the node's store: every change to a runtime setting "
        "or a peer record, whoever made it (any replica's admin API, or the CLI).",
    )
    commands = audit.add_subparsers(dest="audit_command", metavar="COMMAND", required=True)
    list_ = commands.add_parser("list", help="the records, oldest first")
    list_.add_argument("--since", type=_since, metavar="TIME",
                       help="only records at or after TIME (ISO 8601, e.g. 2026-11-30 or "
                       "2026-11-30T12:00:00Z)")
    list_.add_argument("--limit", type=_limit, metavar="N", help="only the newest N records")
    list_.add_argument("--json", action="store_true", help="print a JSON array")
    add_data_dir_option(list_)
    list_.set_defaults(handler=run_list)


def _since(text: str) -> str:
    """TIME as the trail writes it (UTC, milliseconds, `Z`), so it compares as text."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _limit(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def run_list(args: argparse.Namespace) -> int:
    with open_local(existing_data_dir(data_dir(args))) as stores:
        records = stores.audit.list(args.since, args.limit)
    if args.json:
        print_json(records)
        return EXIT_OK
    for record in records:
        print(_line(record))
    return EXIT_OK


def _line(record: dict[str, Any]) -> str:
    """`TS EVENT via=VIA key=K old -> new (client=C)`: one change a line."""
    parts = [str(record.get("ts")), str(record.get("event")), f"via={record.get('via')}"]
    parts += [f"{name}={record[name]}" for name in _SHOWN if name in record]
    if "old" in record or "new" in record:
        parts.append(f"{_value(record.get('old'))} -> {_value(record.get('new'))}")
    known = {"ts", "event", "via", "old", "new", *_SHOWN}
    rest = {k: v for k, v in record.items() if k not in known and v is not None}
    if rest:
        parts.append("(" + ", ".join(f"{k}={_value(v)}" for k, v in rest.items()) + ")")
    return " ".join(parts)


def _value(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
