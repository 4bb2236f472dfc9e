"""`synthorg-a2a status`: what a running node is doing, from its admin API.

By default it asks the node this machine's environment describes (SYNTHORG_BACKEND_HOST and
SYNTHORG_BACKEND_PORT, as `serve` reads them) with the admin token from SYNTHORG_ADMIN_TOKEN,
else from the token file the node keeps in its data dir; `--url` and `--token-env` /
`--token-file` name others.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from synthorg.admin.token import TOKEN_FILENAME
from synthorg.api.serve import DEFAULT_HOST, DEFAULT_PORT
from synthorg.cli.admin_client import AdminClient, AdminUnreachable, node_url
from synthorg.cli.common import EXIT_OK, add_data_dir_option, data_dir, fail, print_json
from synthorg.cli.settings_cmd import (
    EXIT_REMOTE,
    add_remote_options,
    admin_token,
    admin_trust,
    call_remote,
)

if TYPE_CHECKING:
    from synthorg.cli.common import Subparsers

HOST_ENV = "SYNTHORG_BACKEND_HOST"
PORT_ENV = "SYNTHORG_BACKEND_PORT"


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "status",
        help="what a running node is doing: version, uptime, store, workers, peers, tasks",
        description="Ask a running node (its admin API) for its release, uptime, store and "
        "schema version, workers, peers, tasks by state and push deliveries owed. Without "
        f"--url: the node at ${HOST_ENV}:${PORT_ENV} (else {DEFAULT_HOST}:{DEFAULT_PORT}); "
        "the admin token from --token-env's variable, else the data dir's "
        f"{TOKEN_FILENAME}.",
    )
    add_data_dir_option(parser)
    add_remote_options(parser)
    parser.add_argument("--json", action="store_true", help="print the node's JSON answer")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    base = _base_url(args.url)
    if args.token_file is None and not os.environ.get(args.token_env):
        own = data_dir(args) / TOKEN_FILENAME
        if own.is_file():  # the token a local node wrote for its operator
            args.token_file = own
    client = AdminClient(base, admin_token(args), verify=admin_trust(args))

    def ask() -> dict[str, Any]:
        try:
            return client.status()
        except AdminUnreachable as exc:  # said here, with where it looked
            fail(f"cannot reach a node at {base} ({exc}): is it running? "
                 "(synthorg-a2a serve)", EXIT_REMOTE)

    status = call_remote(ask)
    if args.json:
        print_json(status)
    else:
        print(render(base, status))
    return EXIT_OK


def _base_url(url: str | None) -> str:
    if url is None:
        host = os.environ.get(HOST_ENV) or DEFAULT_HOST
        if host in ("0.0.0.0", ""):  # listening everywhere: ask over loopback
            host = "127.0.0.1"
        elif host == "::":
            host = "::1"
        if ":" in host:
            host = f"[{host}]"
        url = f"http://{host}:{os.environ.get(PORT_ENV) or DEFAULT_PORT}"
    try:
        return node_url(url)
    except ValueError as exc:
        fail(str(exc))


def render(base: str, status: dict[str, Any]) -> str:
    store = status["store"]
    schema = f"schema {store['schemaVersion']}"
    if store["schemaVersion"] != store["schemaLatest"]:
        schema += f" (this release knows {store['schemaLatest']})"
    peers = status["peers"]
    counted = [f"{count} {state}" for state, count in status["tasks"].items() if count]
    cache = f"{status['cardCacheEntries']} of {status['cardCacheMaxEntries']}"
    rows = [
        ("node", base),
        ("version", f"synthorg-a2a {status['version']} (contract {status['specVersion']})"),
        ("up", f"{duration(status['uptimeSeconds'])} (since {status['startedAt']})"),
        ("store", f"{store['backend']}, {schema}"),
        ("workers", str(status["workers"])),
        ("a2a", "enabled" if status["a2aEnabled"] else "disabled (a2a.enabled is false)"),
        ("peers", f"{peers['allowed']} allowed, {peers['inCatalog']} in the catalog"),
        ("tasks", ", ".join(counted) if counted else "none"),
        ("push outbox", f"{status['pushOutboxDepth']} owed"),
        ("card cache", cache),
    ]
    width = max(len(name) for name, _ in rows) + 1
    return "\n".join(f"{name + ':':<{width}} {value}" for name, value in rows)


def duration(seconds: int) -> str:
    """`3d 4h 5m 6s`; the units above the first that is not zero left out (`5m 0s`)."""
    days, rest = divmod(max(0, seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    first = next((i for i, (value, _) in enumerate(parts) if value), len(parts) - 1)
    return " ".join(f"{value}{unit}" for value, unit in parts[first:])

