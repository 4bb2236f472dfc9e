"""`synthorg-a2a peers ...`: the connection catalog's `a2a_peer` records.

A running node reads the catalog on every request, so changes apply to its next request.
Secrets go in through standard input or an environment variable (never a command-line
argument, which other users can see in the process list) and are never printed back.

Locally (`--data-dir`, the default) the command edits the node's catalog (the data dir's, or
the shared database's with SYNTHORG_DATABASE_URL) and records each change in the store's
audit trail (`via: "cli"`). With `--url URL` it edits a running node's catalog
through the admin API, with the operator's admin token (see `synthorg.cli.settings_cmd`).
A secret equal to the node's admin token is refused either way.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from synthorg.admin.audit import AuditLog
from synthorg.admin.service import PeersAdmin
from synthorg.admin.token import known_tokens
from synthorg.cards.discovery import probe_peers
from synthorg.cards.fetch import PIN_MISMATCH
from synthorg.cards.pins import parse_pin
from synthorg.cli.admin_client import AdminClient, AdminRefused
from synthorg.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_OK,
    add_data_dir_option,
    data_dir,
    fail,
    open_catalog,
    open_local,
    print_json,
    shown,
)
from synthorg.cli.delegate_cmd import client_tls, load_node_config
from synthorg.cli.settings_cmd import add_remote_options, call_remote, cli_user, remote_client
from synthorg.dialects.outbound import BINDINGS
from synthorg.errors import SynthorgError, UnknownPeer
from synthorg.generated.constants import (
    AUDIT_VIA_CLI,
    CARD_STATUS_OK,
    CARD_STATUS_REFUSED,
    PEER_SCHEME_API_KEY,
)
from synthorg.names import canonical_peer_name
from synthorg.push.sealing import SealedConfigs, Sealer
from synthorg.store.catalog import (
    MAX_SECRET_LENGTH,
    MTLS,
    SCHEMES,
    PeerAddress,
    PeerRecord,
    canonical_endpoint,
    check_new_secret,
    tls_pin_of,
    validate_rate_limit,
)
from synthorg.tls.pins import pin_of_pem

if TYPE_CHECKING:
    from synthorg.cli.common import Subparsers

SECRET_SHOWN = "(stored, encrypted)"
# Enough to tell an over-long secret from a valid one without reading an unbounded stream.
_STDIN_LIMIT = 4 * MAX_SECRET_LENGTH + 2


def register(subparsers: Subparsers) -> None:
    peers = subparsers.add_parser(
        "peers",
        help="manage the connection catalog (peers, their endpoints and credentials)",
        description="Manage a2a_peer records: a peer's endpoint and the credential it "
        "presents (inbound) or is sent (outbound). A running node applies changes to its "
        "next request.",
    )
    commands = peers.add_subparsers(dest="peers_command", metavar="COMMAND", required=True)

    add = commands.add_parser(
        "add",
        help="add or replace a peer",
        description="Add a peer, or replace its record if it exists. The secret is read "
        "from standard input (one trailing newline is dropped; a terminal prompts without "
        "echo) or from the environment variable named by --secret-env.",
    )
    add.add_argument("name", metavar="NAME", help="peer name (a-z, 0-9, '.', '_', '-')")
    add.add_argument("--endpoint", required=True, metavar="URL",
                     help="the peer node's base URL, e.g. http://127.0.0.1:8000")
    add.add_argument("--scheme", choices=sorted(SCHEMES), default=PEER_SCHEME_API_KEY,
                     help="how the credential travels: api_key (X-API-Key), bearer "
                     "(Authorization: Bearer) or mtls (the peer's client certificate, "
                     "pinned: the secret is its pin, sha256//BASE64); default api_key")
    add.add_argument("--cert", type=Path, metavar="PEM",
                     help="with --scheme mtls: pin the key of the peer's certificate in this "
                     "PEM file (instead of reading the pin like a secret)")
    add.add_argument("--secret-env", metavar="VAR",
                     help="read the secret from environment variable VAR instead of stdin")
    add.add_argument("--rate-limit", type=_rate_limit, metavar="R/s", help=RATE_LIMIT_HELP)
    add.add_argument("--card-key", type=_card_key, metavar="KEY",
                     help="pin the key that must sign the peer's cards: a public JWK (JSON), "
                     "or JWKS-URL#THUMBPRINT; 'none' unpins (a record keeps its pin "
                     "otherwise)")
    add.add_argument("--binding", choices=[*BINDINGS, _NO_BINDING], metavar="BINDING",
                     help="send delegations to this peer in this binding: "
                     f"{', '.join(BINDINGS)}; '{_NO_BINDING}' lets its card decide (the first "
                     "interface it lists in a binding this node speaks), as by default; a "
                     "record keeps its binding otherwise")
    add_data_dir_option(add)
    add_remote_options(add)
    add.set_defaults(handler=run_add)

    update = commands.add_parser(
        "update",
        help="change a peer's rate limit",
        description="Change what a peer's record says besides its credential (replace that "
        "with `peers add`). A running node applies it to the peer's next request.",
    )
    update.add_argument("name", metavar="NAME", help="the peer's name in the catalog")
    update.add_argument("--rate-limit", type=_rate_limit, metavar="R/s", required=True,
                        help=RATE_LIMIT_HELP)
    add_data_dir_option(update)
    add_remote_options(update)
    update.set_defaults(handler=run_update)

    list_ = commands.add_parser("list", help="list peers (never their secrets)")
    list_.add_argument("--json", action="store_true", help="print a JSON array")
    list_.add_argument(
        "--no-probe", action="store_true", help="do not fetch each peer's card (reachability)"
    )
    list_.add_argument(
        "--timeout", type=float, default=3.0, metavar="S",
        help="how long to wait for the peers' cards (default: 3)",
    )
    add_data_dir_option(list_)
    add_remote_options(list_)
    list_.set_defaults(handler=run_list)

    show = commands.add_parser("show", help="show one peer (never its secret)")
    show.add_argument("name", metavar="NAME", help="the peer's name in the catalog")
    show.add_argument("--json", action="store_true", help="print a JSON object")
    add_data_dir_option(show)
    add_remote_options(show)
    show.set_defaults(handler=run_show)

    rekey = commands.add_parser(
        "rekey",
        help="encrypt every peer secret again with the newest key",
        description="Encrypt every peer record's secret again with the newest key of "
        "SYNTHORG_SECRET_KEY (several keys, newest first: records encrypted with any of them "
        "are read). Afterwards the older keys can be dropped from SYNTHORG_SECRET_KEY. All "
        "records or none; prints how many.",
    )
    add_data_dir_option(rekey)
    rekey.set_defaults(handler=run_rekey)

    remove = commands.add_parser("remove", help="remove a peer")
    remove.add_argument("name", metavar="NAME", help="the peer's name in the catalog")
    add_data_dir_option(remove)
    add_remote_options(remove)
    remove.set_defaults(handler=run_remove)


RATE_LIMIT_HELP = ("requests per second this peer may make, e.g. 5/s (0: no limit for it); "
                   "'default' follows a2a.peer_rate_limit_per_second")
_DEFAULT = "default"


def _rate_limit(raw: str) -> float | str:
    """`5`, `5/s`, `0.5/s` or `default` (stored as no override)."""
    text = raw.strip().lower()
    if text == _DEFAULT:
        return _DEFAULT
    number = text.removesuffix("/s")
    try:
        value = float(number)
        validate_rate_limit(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid rate limit {shown(raw)}: use R/s with R from 0 to 1000000, or 'default'"
        ) from None
    return value


_NO_PIN = "none"
_NO_BINDING = "card"  # --binding: no binding set, the peer's card decides


def _binding(value: str) -> str | None:
    return None if value == _NO_BINDING else value


def _card_key(raw: str) -> str:
    if raw.strip().lower() == _NO_PIN:
        return _NO_PIN
    try:
        return parse_pin(raw).text
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _pin(value: str) -> str | None:
    return None if value == _NO_PIN else value


def _override(value: float | str) -> float | None:
    return None if value == _DEFAULT else float(value)


def _shown_limit(per_second: float | None) -> str:
    if per_second is None:
        return _DEFAULT
    return "none" if per_second <= 0 else f"{per_second:g}/s"  # 0: no limit for this peer


def run_update(args: argparse.Namespace) -> int:
    client = remote_client(args)
    if client is not None:
        name = _remote_name(args.name)
        peer = call_remote(lambda: client.set_peer_rate_limit(name, _override(args.rate_limit)),
                           not_found=lambda: _not_found(args.name))
        print(f"updated peer {peer['name']} (rate limit {_shown_limit(peer['rateLimit'])})")
        return EXIT_OK
    directory = data_dir(args)
    with open_local(directory) as stores:
        peers = PeersAdmin(stores.catalog, AuditLog(stores.audit), [])
        try:
            record = peers.set_rate_limit(args.name, _override(args.rate_limit), via=AUDIT_VIA_CLI,
                                          user=cli_user())
        except UnknownPeer:
            _not_found(args.name)
        except SynthorgError as problem:
            fail(str(problem))
    print(f"updated peer {record.name} (rate limit {_shown_limit(record.rate_limit)})")
    return EXIT_OK


def run_add(args: argparse.Namespace) -> int:
    # Check what we can before asking for the secret, so an operator at a terminal is not
    # prompted for a credential that would then be refused for a typo in the name.
    name = canonical_peer_name(args.name)
    if name is None:
        fail(f"invalid peer name {shown(args.name)}: use 1-63 characters of a-z, 0-9, '.', "
             "'_' or '-', starting with a letter or digit")
    try:
        canonical_endpoint(args.endpoint)
    except ValueError as exc:
        fail(str(exc))
    client = remote_client(args)
    if args.cert is not None:
        secret = _certificate_pin(args)
    else:
        secret = _read_secret(args.secret_env, name)
        try:
            check_new_secret(secret)  # here too, so a remote node is not asked in vain
        except ValueError as exc:
            fail(str(exc))
    if client is not None:
        public, created = _add_remote(client, name, args.endpoint, args.scheme, secret)
        if args.rate_limit is not None:
            limit = _override(args.rate_limit)
            call_remote(lambda: client.set_peer_rate_limit(name, limit))
        if args.card_key is not None:
            pin = _pin(args.card_key)
            call_remote(lambda: client.set_peer_card_key(name, pin))
        if args.binding is not None:
            binding = _binding(args.binding)
            public = _remote_public(call_remote(lambda: client.set_peer_binding(name, binding)))
    else:
        directory = data_dir(args)
        with open_local(directory) as stores:
            peers = PeersAdmin(stores.catalog, AuditLog(stores.audit), known_tokens(directory))
            try:
                record, created = peers.put(name, args.endpoint, args.scheme, secret,
                                            via=AUDIT_VIA_CLI, user=cli_user())
                if args.rate_limit is not None:
                    record = peers.set_rate_limit(name, _override(args.rate_limit),
                                                  via=AUDIT_VIA_CLI, user=cli_user())
                if args.card_key is not None:
                    record = peers.set_card_key(name, _pin(args.card_key), via=AUDIT_VIA_CLI,
                                                user=cli_user())
                if args.binding is not None:
                    record = peers.set_binding(name, _binding(args.binding), via=AUDIT_VIA_CLI,
                                               user=cli_user())
            except SynthorgError as problem:  # its messages never echo the secret
                fail(str(problem))
        public = _public(record)
    print(f"{'added' if created else 'updated'} peer {public['name']} "
          f"(endpoint {public['endpoint']}, scheme {public['scheme']})")
    return EXIT_OK


def _certificate_pin(args: argparse.Namespace) -> str:
    """The pin of the certificate --cert names (a certificate is public: no secret read)."""
    if args.scheme != MTLS:
        fail("--cert pins a certificate: use it with --scheme mtls")
    if args.secret_env is not None:
        fail("--cert and --secret-env both give the pin: use one")
    try:
        return pin_of_pem(args.cert.read_bytes())
    except OSError as exc:
        fail(f"cannot read {args.cert}: {exc.strerror or type(exc).__name__}")
    except ValueError as exc:
        fail(f"{args.cert}: {exc}")


def _add_remote(client: AdminClient, name: str, endpoint: str, scheme: str, secret: str
                ) -> tuple[dict[str, str], bool]:
    """Create, or replace when the name is taken (`peers add` adds or replaces)."""

    def create() -> dict[str, Any] | None:
        try:
            return client.create_peer(name, endpoint, scheme, secret)
        except AdminRefused as exc:
            if exc.status == 409:
                return None
            raise

    created = call_remote(create)
    if created is not None:
        return _remote_public(created), True
    replaced = call_remote(lambda: client.replace_peer(name, endpoint, scheme, secret))
    return _remote_public(replaced), False


def _remote_public(peer: dict[str, Any]) -> dict[str, Any]:
    """An AdminPeer in the CLI's own shape (what `_public` prints for a local record)."""
    return {
        "name": peer["name"],
        "endpoint": peer["endpoint"],
        "scheme": peer["scheme"],
        "rate_limit": peer.get("rateLimit"),
        "card_key": peer.get("cardKey"),
        "binding": peer.get("binding"),
        "created_at": peer["createdAt"],
        "updated_at": peer["updatedAt"],
    }


def _read_secret(env_var: str | None, name: str) -> str:
    if env_var is not None:
        value = os.environ.get(env_var)
        if value is None:
            fail(f"--secret-env: environment variable {shown(env_var)} is not set")
        if not value.strip():
            fail(f"--secret-env: environment variable {shown(env_var)} is empty")
        return value
    stdin = sys.stdin
    if stdin is not None and stdin.isatty():
        try:
            return getpass.getpass(f"secret for {name}: ")
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)
            fail("no secret entered")
    secret = _read_stdin(stdin)
    # Exactly one trailing newline: `echo KEY |` adds one, and the catalog refuses any
    # other surrounding whitespace rather than silently altering the credential.
    if secret.endswith("\r\n"):
        secret = secret[:-2]
    elif secret.endswith("\n"):
        secret = secret[:-1]
    if not secret:
        fail("no secret given: pipe it on standard input or name an environment variable "
             "with --secret-env VAR")
    return secret


def _read_stdin(stdin: Any) -> str:
    if stdin is None:
        return ""
    buffer = getattr(stdin, "buffer", None)
    if buffer is None:
        return str(stdin.read(_STDIN_LIMIT))
    try:
        return bytes(buffer.read(_STDIN_LIMIT)).decode("utf-8")
    except UnicodeDecodeError:
        fail("the secret on standard input is not UTF-8 text")


def _public(record: PeerRecord) -> dict[str, Any]:
    """A record without its secret: the only shape the CLI ever prints. `rate_limit` is the
    peer's own requests per second, null when it follows a2a.peer_rate_limit_per_second."""
    return {
        "name": record.name,
        "endpoint": record.endpoint,
        "scheme": record.scheme,
        "rate_limit": record.rate_limit,
        "card_key": record.card_key,
        "binding": record.binding,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
    }


def run_list(args: argparse.Namespace) -> int:
    client = remote_client(args)
    if client is not None:
        records = [_remote_public(p) for p in call_remote(client.list_peers)]
        where = args.url
    else:
        where = str(data_dir(args))
        with open_catalog(data_dir(args)) as catalog:
            listed = catalog.list()
        records = [_public(r) for r in listed]
    # Probing asks each peer for its card from here, which only says something about the
    # node's view when run on the node's own data dir: as the node asks (its client
    # certificate shown, and an mtls peer's server certificate checked against its pin).
    probed = bool(records) and not args.no_probe and client is None
    cards: dict[str, dict[str, Any]] = {}
    if probed:
        addresses = [PeerAddress(r.name, r.endpoint, r.card_key, tls_pin_of(r)) for r in listed]
        directory = data_dir(args)
        tls = client_tls(load_node_config(directory), directory)
        cards = {s.peer: s.to_json() for s in probe_peers(addresses, args.timeout, tls)}
    if args.json:
        print_json([{**r, "card": cards[r["name"]]} if probed else r for r in records])
    elif not records:
        print(f"no peers in {where} (add one with: synthorg-a2a peers add NAME "
              "--endpoint URL)")
    else:
        card_column = ("CARD",) if probed else ()
        header = ("NAME", "ENDPOINT", "SCHEME", "RATE", "BINDING", "CREATED", "UPDATED",
                  *card_column)
        rows = [header] + [
            (r["name"], r["endpoint"], r["scheme"], _shown_limit(r["rate_limit"]),
             r.get("binding") or _NO_BINDING, r["created_at"], r["updated_at"],
             *((_describe(cards[r["name"]]),) if probed else ()))
            for r in records
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        for row in rows:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return EXIT_OK


def _describe(card: dict[str, Any]) -> str:
    """Reachability and skill count, as `ok, 3 skills` or `unreachable: timeout`."""
    if card["status"] == CARD_STATUS_OK:
        trust = "signature verified" if card["verified"] else "unverified"
        return f"ok, {card['skills']} skill{'' if card['skills'] == 1 else 's'}, {trust}"
    if card["status"] == CARD_STATUS_REFUSED:
        return f"refused: {card['detail']}"
    if card["detail"] == PIN_MISMATCH:  # an mtls peer answering with another key: say so
        return f"unreachable: {card['reason']} ({PIN_MISMATCH})"
    return f"unreachable: {card['reason']}"


def run_show(args: argparse.Namespace) -> int:
    client = remote_client(args)
    if client is not None:
        name = _remote_name(args.name)
        public = _remote_public(
            call_remote(lambda: client.get_peer(name), not_found=lambda: _not_found(args.name))
        )
    else:
        with open_catalog(data_dir(args)) as catalog:
            record = catalog.get(args.name)
        if record is None:
            _not_found(args.name)
        public = _public(record)
    if args.json:
        print_json(public)
    else:
        fields = {**public, "secret": SECRET_SHOWN,
                  "rate_limit": _shown_limit(public["rate_limit"])}
        width = max(len(key) for key in fields) + 1
        fields["card_key"] = fields["card_key"] or "(none: cards accepted unverified)"
        fields["binding"] = fields["binding"] or "(none: the peer's card decides)"
        for key in ("name", "endpoint", "scheme", "secret", "rate_limit", "card_key",
                    "binding", "created_at", "updated_at"):
            print(f"{key + ':':<{width}} {fields[key]}")
    return EXIT_OK


def run_remove(args: argparse.Namespace) -> int:
    client = remote_client(args)
    if client is not None:
        name = _remote_name(args.name)
        call_remote(lambda: client.delete_peer(name), not_found=lambda: _not_found(args.name))
    else:
        name = canonical_peer_name(args.name) or ""
        directory = data_dir(args)
        with open_local(directory) as stores:
            peers = PeersAdmin(stores.catalog, AuditLog(stores.audit), [])
            try:
                peers.delete(name, via=AUDIT_VIA_CLI, user=cli_user())
            except SynthorgError:
                _not_found(args.name)
    print(f"removed peer {name}")
    return EXIT_OK


def run_rekey(args: argparse.Namespace) -> int:
    with open_local(data_dir(args)) as stores:
        push_secrets = SealedConfigs(stores.push_configs, Sealer(stores.box))
        done = PeersAdmin(stores.catalog, AuditLog(stores.audit), [], push_secrets).rekey(
            via=AUDIT_VIA_CLI, user=cli_user()
        )
        running = asyncio.run(stores.tasks.live_runners()) if stores.box.key_count > 1 else 0
    print(f"re-encrypted {done.peers} peer record{'' if done.peers == 1 else 's'} and "
          f"{done.push_configs} push config{'' if done.push_configs == 1 else 's'} with the "
          "newest key")
    if running:
        # A node reads the catalog with the keys it was started with: one started before the
        # newest key was added to SYNTHORG_SECRET_KEY now refuses every peer.
        print(f"warning: {running} node process{'' if running == 1 else 'es'} serving this "
              "store now; one started with only the older key(s) cannot decrypt the records "
              "and refuses every peer (a2a.inbound.auth_failed, reason record_undecryptable): "
              "restart each with the newest key first in SYNTHORG_SECRET_KEY", file=sys.stderr)
    return EXIT_OK


def _remote_name(raw: str) -> str:
    """The canonical name the admin API knows the peer by (it takes no other spelling)."""
    name = canonical_peer_name(raw)
    if name is None:
        _not_found(raw)
    return name


def _not_found(raw: str) -> NoReturn:
    fail(f"no peer named {shown(canonical_peer_name(raw) or raw)}", EXIT_NOT_FOUND)
