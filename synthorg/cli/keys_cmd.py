"""`synthorg-a2a keys list|rotate|retire|generate`: the keys that sign this node's cards.

`rotate` adds a key that signs from the node's next start; the older keys stay published in
the JWKS until `retire` removes them. `generate` prints a fresh key set for
`SYNTHORG_CARD_KEYS` (replicas share one). While that variable is set the data dir's file is
not used, so `rotate` and `retire` refuse: change the variable instead.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from synthorg.cards.keys import (
    ALGORITHMS,
    DEFAULT_ALGORITHM,
    KEYS_ENV,
    CardKeyError,
    CardKeySet,
    new_key,
)
from synthorg.cli.common import EXIT_OK, add_data_dir_option, data_dir, fail, print_json

if TYPE_CHECKING:
    from synthorg.cli.common import Subparsers


def register(subparsers: Subparsers) -> None:
    group = subparsers.add_parser("keys", help="the keys that sign this node's cards")
    commands = group.add_subparsers(dest="keys_command", metavar="COMMAND", required=True)
    listing = commands.add_parser(
        "list", help="list the card keys (the last one signs; all are in the JWKS)")
    listing.add_argument("--json", action="store_true", help="the public keys as a JWKS")
    listing.set_defaults(handler=run_list)
    rotate = commands.add_parser(
        "rotate", help="add a new signing key; the older ones stay published until retired",
        description="Add a key that signs the cards from the node's next start. The keys "
        "before it stay in the JWKS, so cards signed with them still verify, until retired.")
    rotate.add_argument("--alg", choices=ALGORITHMS, default=DEFAULT_ALGORITHM)
    rotate.set_defaults(handler=run_rotate)
    retire = commands.add_parser(
        "retire", help="stop publishing an older key (by kid)")
    # A kid is a base64url thumbprint, so one in 64 starts with '-', which argparse reads as
    # an option: such a kid goes after '--'.
    retire.add_argument("kid", metavar="KID", help="the key id, as keys list shows it (one "
                        "that starts with '-' goes after '--': keys retire -- -AbC…)")
    retire.set_defaults(handler=run_retire)
    generate = commands.add_parser(
        "generate", help=f"print a fresh key set for {KEYS_ENV} (replicas share one)")
    generate.add_argument("--alg", choices=ALGORITHMS, default=DEFAULT_ALGORITHM)
    generate.set_defaults(handler=run_generate)
    for command in (listing, rotate, retire):
        add_data_dir_option(command)


def _load(args: argparse.Namespace, *, create: bool) -> CardKeySet:
    try:
        return CardKeySet.load(data_dir(args), create=create)
    except CardKeyError as exc:
        fail(str(exc))


def _in_file(keys: CardKeySet) -> CardKeySet:
    if keys.source == "env":
        fail(f"the card keys come from {KEYS_ENV}: change the variable instead")
    return keys


def run_list(args: argparse.Namespace) -> int:
    keys = _load(args, create=False)
    if args.json:
        print_json(keys.jwks())
        return EXIT_OK
    for key in keys.keys:
        role = "signing" if key is keys.signer else "published"
        print(f"{key.kid}  {key.alg:5}  {role:9}  {key.created_at}")
    return EXIT_OK


def _save(keys: CardKeySet) -> None:
    try:
        keys.save()
    except (CardKeyError, OSError) as exc:
        fail(f"cannot write the card keys: {exc}")


def run_rotate(args: argparse.Namespace) -> int:
    keys = _in_file(_load(args, create=True))
    try:
        rotated = keys.rotated(args.alg)
    except CardKeyError as exc:
        fail(str(exc))
    _save(rotated)
    print(f"{rotated.signer.kid}: signs the cards from the node's next start; "
          f"{keys.signer.kid} stays published until retired")
    return EXIT_OK


def run_retire(args: argparse.Namespace) -> int:
    keys = _in_file(_load(args, create=False))
    try:
        remaining = keys.retired(args.kid)
    except CardKeyError as exc:
        fail(str(exc))
    _save(remaining)
    print(f"{args.kid}: retired (no longer published from the node's next start)")
    return EXIT_OK


def run_generate(args: argparse.Namespace) -> int:
    try:
        fresh = CardKeySet((new_key(args.alg),), "env")
    except CardKeyError as exc:
        fail(str(exc))
    sys.stdout.write(fresh.to_json())
    return EXIT_OK
