"""`synthorg-a2a settings ...`: the runtime settings of the `a2a` namespace.

Locally (`--data-dir`, the default) the command reads and writes the data dir's store, as the
node does: a running node on that data dir applies a write from its next request. Remotely
(`--url URL`) it goes through the node's admin API with the operator's admin token, taken
from an environment variable (`--token-env`, default SYNTHORG_ADMIN_TOKEN) or a file
(`--token-file`), never from the command line, and never printed. A node serving https with a
private CA is verified with that CA besides the system's (`--ca-file`, default the
SYNTHORG_ADMIN_CA_FILE variable).

Every write is audited: locally with `via: "cli"` in the store's audit trail, remotely by the
node (`via: "admin_api"`).
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import os
import ssl
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from synthorg.admin.audit import AuditLog
from synthorg.admin.service import SettingsAdmin, setting_json
from synthorg.admin.token import TOKEN_ENV, TOKEN_FILENAME, token_problem
from synthorg.cli.admin_client import (
    AdminClient,
    AdminRefused,
    AdminUnreachable,
    node_url,
    trusting,
)
from synthorg.cli.admin_client import sends_token_in_clear as _in_clear
from synthorg.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_data_dir_option,
    data_dir,
    existing_data_dir,
    fail,
    open_local,
    print_json,
    shown,
)
from synthorg.config.company import ConfigError, load_config
from synthorg.errors import StoreError, SynthorgError
from synthorg.generated.constants import (
    ADMIN_ERROR_NOT_FOUND,
    ADMIN_ERROR_UNKNOWN_PEER,
    ADMIN_ERROR_UNKNOWN_SETTING,
    AUDIT_VIA_CLI,
)
from synthorg.settings.definitions.a2a import SettingDefinition, definitions
from synthorg.settings.runtime import RuntimeSettings, setting_definition

if TYPE_CHECKING:
    from synthorg.cli.common import Subparsers

CA_FILE_ENV = "SYNTHORG_ADMIN_CA_FILE"  # --ca-file's default: a private CA the node's https uses
EXIT_REMOTE = 3  # the node could not be reached, refused the token, or answered unexpectedly
T = TypeVar("T")


# -- remote mode, shared with `peers` ---------------------------------------------------------


def add_remote_options(parser: argparse.ArgumentParser) -> None:
    """`--url` plus where the admin token comes from; `--url` and `--data-dir` exclude each
    other (checked by `remote_client`)."""
    group = parser.add_argument_group(
        "remote node", "act on a running node through its admin API instead of a data dir"
    )
    group.add_argument("--url", metavar="URL",
                       help="the node's base URL, e.g. http://127.0.0.1:8000")
    source = group.add_mutually_exclusive_group()
    source.add_argument("--token-env", metavar="VAR", default=TOKEN_ENV,
                        help=f"read the admin token from environment variable VAR "
                        f"(default {TOKEN_ENV})")
    source.add_argument("--token-file", type=Path, metavar="FILE",
                        help=f"read the admin token from FILE (the node writes one to "
                        f"DATA_DIR/{TOKEN_FILENAME})")
    group.add_argument("--ca-file", type=Path, metavar="FILE",
                       help="trust the CA certificates in FILE (PEM) besides the system's, "
                       "for a node serving https with a private CA (default: environment "
                       f"variable {CA_FILE_ENV}, if set)")


def remote_client(args: argparse.Namespace) -> AdminClient | None:
    """The admin client when `--url` was given, else None (local mode)."""
    url: str | None = getattr(args, "url", None)
    if url is None:
        return None
    if getattr(args, "data_dir", None) is not None:
        fail("--url and --data-dir exclude each other: act on a remote node or a data dir")
    try:
        base = node_url(url)
    except ValueError as exc:
        fail(str(exc))
    token = admin_token(args)
    if _in_clear(base):
        print(f"warning: {base} is plain HTTP to a host that is not loopback: the admin token "
              "crosses the network unencrypted", file=sys.stderr)
    return AdminClient(base, token, verify=admin_trust(args))


def admin_trust(args: argparse.Namespace) -> ssl.SSLContext | None:
    """The roots an https node is verified with: the system's, plus --ca-file's (else the
    CA_FILE_ENV variable's) CA; None: the system's alone."""
    ca_file: Path | None = getattr(args, "ca_file", None)
    where = "--ca-file"
    if ca_file is None:
        value = os.environ.get(CA_FILE_ENV)
        if not value:
            return None
        ca_file, where = Path(value), f"environment variable {CA_FILE_ENV}"
    try:
        return trusting(ca_file.expanduser())
    except ValueError as exc:
        fail(f"{where}: {exc}")


def admin_token(args: argparse.Namespace) -> str:
    """The admin token from --token-file or the --token-env variable; a CliError when there
    is none or it is malformed (never quoting it)."""
    token_file: Path | None = args.token_file
    if token_file is not None:
        try:
            raw = token_file.read_bytes()
        except OSError as exc:
            fail(f"--token-file: cannot read {token_file}: {exc.strerror or exc}")
        where = f"--token-file {token_file}"
    else:
        var: str = args.token_env
        value = os.environ.get(var)
        if value is None:
            fail(f"no admin token: environment variable {shown(var)} is not set (name another "
                 f"with --token-env VAR, or use --token-file FILE, e.g. the node's "
                 f"DATA_DIR/{TOKEN_FILENAME})")
        raw = value.encode("utf-8", "surrogateescape")
        where = f"environment variable {shown(var)}"
    token = raw.strip()
    problem = token_problem(token)
    if problem is not None:
        fail(f"the admin token in {where} {problem}")
    return token.decode("ascii")


def call_remote(action: Callable[[], T], *, not_found: Callable[[], NoReturn] | None = None
                ) -> T:
    """Run one admin API call; refusals become CliErrors (never quoting the token)."""
    try:
        return action()
    except AdminUnreachable as exc:
        fail(f"cannot reach the node's admin API ({exc})", EXIT_REMOTE)
    except AdminRefused as exc:
        if exc.status == 400 or exc.error == ADMIN_ERROR_UNKNOWN_SETTING:
            fail(exc.message)
        if exc.error == ADMIN_ERROR_UNKNOWN_PEER and not_found is not None:
            not_found()
        if exc.status == 401:
            fail("the node refused the admin token (HTTP 401): check --token-env or "
                 "--token-file", EXIT_REMOTE)
        if exc.status == 404 and exc.error in (None, ADMIN_ERROR_NOT_FOUND):
            fail("no admin API at this URL (HTTP 404): give the node's base URL", EXIT_REMOTE)
        fail(f"the node refused: {exc.message} (HTTP {exc.status})", EXIT_REMOTE)


def cli_user() -> str | None:
    """Who ran the command, for the audit trail."""
    with contextlib.suppress(Exception):
        return getpass.getuser()
    return None


# -- the command group -------------------------------------------------------------------------


KEY_HELP = "the setting: a2a.NAME, or NAME (see settings list)"

def register(subparsers: Subparsers) -> None:
    settings = subparsers.add_parser(
        "settings",
        help="read and change the runtime settings (a2a namespace)",
        description="Runtime settings of the a2a namespace: the value in force is the runtime "
        "write if any, else config.yaml, else the default. A running node applies a write "
        "from its next request, without a restart. KEY is a2a.NAME (the a2a. may be left "
        "out). Keys: " + ", ".join(d.name for d in definitions().values()) + ".",
    )
    commands = settings.add_subparsers(dest="settings_command", metavar="COMMAND",
                                       required=True)

    list_ = commands.add_parser("list", help="every setting: value, source, default, range")
    list_.add_argument("--json", action="store_true", help="print a JSON array")
    _common(list_, run_list)

    get = commands.add_parser("get", help="one setting")
    get.add_argument("key", metavar="KEY", help=KEY_HELP)
    get.add_argument("--json", action="store_true", help="print a JSON object")
    _common(get, run_get)

    set_ = commands.add_parser(
        "set", help="write a setting (applies from the next request)",
        description="Write a runtime setting. VALUE is a JSON number: an integer setting "
        "takes a whole number (5, not 5.0). A value of the wrong type or out of range is "
        "refused (exit 2) and nothing is written.",
    )
    set_.add_argument("key", metavar="KEY", help=KEY_HELP)
    set_.add_argument("value", metavar="VALUE",
                      help="a JSON number in the setting's range (an integer setting takes 5, "
                      "not 5.0)")
    set_.add_argument("--json", action="store_true", help="print the setting as JSON")
    _common(set_, run_set)

    reset = commands.add_parser(
        "reset", help="drop the runtime write: config.yaml's value, else the default, applies"
    )
    reset.add_argument("key", metavar="KEY", help=KEY_HELP)
    reset.add_argument("--json", action="store_true", help="print the setting as JSON")
    _common(reset, run_reset)


def _common(parser: argparse.ArgumentParser, handler: Callable[[argparse.Namespace], int]
            ) -> None:
    add_data_dir_option(parser)
    add_remote_options(parser)
    parser.set_defaults(handler=handler)


@contextmanager
def _local(directory: Path) -> Iterator[SettingsAdmin]:
    try:
        config = load_config(directory)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    with open_local(directory) as stores:
        try:
            settings = RuntimeSettings(stores.settings, config.a2a)
            yield SettingsAdmin(settings, AuditLog(stores.audit))
        except StoreError:
            raise  # open_local words it
        except SynthorgError as problem:
            raise CliError(str(problem), EXIT_USAGE) from None


def _definition(raw: str) -> SettingDefinition:
    """The setting KEY names, as the settings' owner looks it up (a2a. may be left out)."""
    try:
        return setting_definition(raw, allow_bare=True)
    except SynthorgError as problem:
        fail(str(problem))


def _value(raw: str, definition: SettingDefinition) -> Any:
    """VALUE as JSON; the settings' owner checks its type and range. Only what is not a JSON
    number at all is refused here (the node's admin API would refuse it as a body)."""
    try:
        value = json.loads(raw, parse_constant=_not_json)
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, int | float) or isinstance(value, bool):
        fail(f"{definition.name} must be {definition.describe_range()}; got {shown(raw)}")
    try:
        definition.coerce(value)
    except ValueError:  # said with VALUE as typed: `1e9`, not 1000000000.0
        fail(f"{definition.name} must be {definition.describe_range()}; got {shown(raw)}")
    return value


def _not_json(name: str) -> Any:
    raise ValueError(name)


def _number(value: Any) -> str:
    return json.dumps(value)


def run_list(args: argparse.Namespace) -> int:
    client = remote_client(args)
    if client is not None:
        views = call_remote(client.list_settings)
    else:
        with _local(existing_data_dir(data_dir(args))) as admin:
            views = [setting_json(view) for view in admin.list()]
    if args.json:
        print_json(views)
        return EXIT_OK
    header = ("NAME", "VALUE", "SOURCE", "DEFAULT", "ALLOWED")
    rows = [header] + [
        (v["name"], _number(v["value"]), v["source"], _number(v["default"]), _allowed(v))
        for v in views
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return EXIT_OK


def _allowed(view: dict[str, Any]) -> str:
    kind = "an integer" if view["type"] == "integer" else "a number"
    return f"{kind} from {_number(view['minimum'])} to {_number(view['maximum'])}"


def run_get(args: argparse.Namespace) -> int:
    definition = _definition(args.key)
    client = remote_client(args)
    if client is not None:
        view = call_remote(lambda: client.get_setting(definition.name))
    else:
        with _local(existing_data_dir(data_dir(args))) as admin:
            view = setting_json(admin.get(definition.name))
    if args.json:
        print_json(view)
        return EXIT_OK
    fields = {
        "name": view["name"],
        "value": _number(view["value"]),
        "source": view["source"],
        "default": _number(view["default"]),
        "allowed": _allowed(view),
    }
    if view.get("description"):
        fields["description"] = view["description"]
    width = max(len(key) for key in fields) + 1
    for key, value in fields.items():
        print(f"{key + ':':<{width}} {value}")
    return EXIT_OK


def run_set(args: argparse.Namespace) -> int:
    definition = _definition(args.key)
    value = _value(args.value, definition)
    client = remote_client(args)
    old: float | int | None = None
    old_source = None
    if client is not None:
        view = call_remote(lambda: client.set_setting(definition.name, value))
    else:
        with _local(data_dir(args)) as admin:
            change = admin.set(definition.name, value, via=AUDIT_VIA_CLI, user=cli_user())
            view = setting_json(change.after)
            old, old_source = change.before.value, change.before.source
    return _report(args, view, old, old_source)


def run_reset(args: argparse.Namespace) -> int:
    definition = _definition(args.key)
    client = remote_client(args)
    old: float | int | None = None
    old_source = None
    if client is not None:
        view = call_remote(lambda: client.reset_setting(definition.name))
    else:
        with _local(data_dir(args)) as admin:
            change = admin.reset(definition.name, via=AUDIT_VIA_CLI, user=cli_user())
            view = setting_json(change.after)
            old, old_source = change.before.value, change.before.source
    return _report(args, view, old, old_source)


def _report(args: argparse.Namespace, view: dict[str, Any], old: Any,
            old_source: str | None) -> int:
    """`a2a.max_message_parts = 5 (runtime; was 100 from default)`; remotely the node's audit
    trail has the value before, so only the value now is shown."""
    if args.json:
        print_json(view)
        return EXIT_OK
    was = "" if old_source is None else f"; was {_number(old)} from {old_source}"
    print(f"{view['name']} = {_number(view['value'])} ({view['source']}{was})")
    return EXIT_OK
