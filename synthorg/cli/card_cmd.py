"""`synthorg-a2a card [URL | --peer NAME | --agent ID]`: show an agent card and check it.

With no source it renders this node's company card from the data dir's company YAML (what the
node serves); `--agent` renders one agent's card; `URL` or `--peer` fetch a card over HTTP with
the same limits discovery uses. Every card is validated against the spec's AgentCard schema.
Exit codes: 0 the card is a valid AgentCard; 1 it is not, or could not be fetched, or no such
agent or peer; 2 usage or configuration error.

Rendered locally, the card's url is `a2a.public_url` when configured, else the address
`SYNTHORG_BACKEND_HOST`/`SYNTHORG_BACKEND_PORT` give (the served card uses the address the
node was reached on).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import ssl
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from synthorg.api.serve import DEFAULT_HOST, DEFAULT_PORT
from synthorg.cards.fetch import CARD_PATH, card_url, fetch_card_document
from synthorg.cards.peer_card import InvalidCard, read_peer_card
from synthorg.cards.projection import agent_card, card_version, company_card
from synthorg.cards.render import clean, render_card
from synthorg.cards.validation import spec_issues
from synthorg.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    add_data_dir_option,
    data_dir,
    fail,
    open_catalog,
    print_json,
)
from synthorg.cli.delegate_cmd import client_tls, load_node_config
from synthorg.config.company import ConfigError, NodeConfig, load_config
from synthorg.names import is_agent_id
from synthorg.store.catalog import PeerRecord, canonical_endpoint
from synthorg.tls.outbound import request_extensions

if TYPE_CHECKING:
    from synthorg.cli.common import Subparsers

DEFAULT_TIMEOUT = 10.0


def register(subparsers: Subparsers) -> None:
    card = subparsers.add_parser(
        "card",
        help="show an agent card (this node's, an agent's, a peer's or any URL's) and check it",
        description="Render this node's company card (no argument) or one agent's (--agent), "
        "or fetch a card from a URL or a catalog peer (--peer); then validate it against the "
        "spec's AgentCard schema. Exit 0 when valid, 1 when not (or not found), 2 on usage "
        "or configuration errors.",
    )
    source = card.add_mutually_exclusive_group()
    source.add_argument("url", nargs="?", metavar="URL",
                        help="a node's base URL or a card's URL to fetch")
    source.add_argument("--peer", metavar="NAME", help="fetch the card of this catalog peer")
    source.add_argument("--agent", metavar="ID", help="render this local agent's card")
    card.add_argument("--json", action="store_true", help="print the card as JSON")
    card.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                      help=f"for fetching (default {DEFAULT_TIMEOUT:g})")
    add_data_dir_option(card)
    card.set_defaults(handler=run_card)


def run_card(args: argparse.Namespace) -> int:
    if args.url is not None:
        document = _fetch(_card_url_from(args.url), args.timeout)
    elif args.peer is not None:
        record = _peer_record(args)
        directory = data_dir(args)
        # as the node asks: its client certificate shown, an mtls peer's pin checked
        document = _fetch(card_url(record.endpoint), args.timeout,
                          client_tls(load_node_config(directory), directory),
                          request_extensions(record.scheme, record.secret))
    else:
        document = _render_local(args)
    return _report(document, args.json)


def _card_url_from(raw: str) -> str:
    """A base URL gets the well-known path; a URL naming a .json file is used as given."""
    try:
        url = canonical_endpoint(raw)
    except ValueError as exc:
        fail(f"URL: {exc}")
    return url if urlsplit(url).path.endswith(".json") else url + CARD_PATH


def _peer_record(args: argparse.Namespace) -> PeerRecord:
    with open_catalog(data_dir(args)) as catalog:
        record = catalog.get(args.peer)
    if record is None:
        fail(f"no peer named {clean(args.peer, 80)} in the catalog", EXIT_NOT_FOUND)
    return record


def _fetch(url: str, timeout: float, tls: ssl.SSLContext | None = None,
           extensions: dict[str, Any] | None = None) -> Any:
    if not 0 < timeout <= 600:
        fail("--timeout must be more than 0 and at most 600 seconds")
    fetched = asyncio.run(fetch_card_document(url, timeout=timeout, tls=tls,
                                              extensions=extensions))
    if fetched.reason is not None:
        fail(f"cannot fetch {clean(url)}: {fetched.reason} ({fetched.detail})", EXIT_NOT_FOUND)
    return fetched.document


def _render_local(args: argparse.Namespace) -> Any:
    try:
        config = load_config(data_dir(args))
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    if not config.a2a.enabled:
        print("note: a2a.enabled is false, so the node does not serve this card",
              file=sys.stderr)
    base = _local_base_url(config)
    if args.agent is None:
        card = company_card(config, base, card_version())
    else:
        agent = next((a for a in config.agents if a.id == args.agent), None)
        if agent is None:
            what = "agent" if is_agent_id(args.agent) else "well-formed agent id"
            fail(f"no {what} {clean(args.agent, 80)} in the company YAML", EXIT_NOT_FOUND)
        card = agent_card(config, agent, base, card_version())
    return card.model_dump(mode="json", by_alias=True, exclude_none=True)


def _local_base_url(config: NodeConfig) -> str:
    if config.a2a.public_url:
        return config.a2a.public_url.rstrip("/")
    host = os.environ.get("SYNTHORG_BACKEND_HOST") or DEFAULT_HOST
    port = os.environ.get("SYNTHORG_BACKEND_PORT") or str(DEFAULT_PORT)
    scheme = "https" if config.server.tls is not None else "http"  # as the node serves it
    return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"


def _report(document: Any, as_json: bool) -> int:
    issues = spec_issues(document, "AgentCard")
    if as_json:
        print_json(document)
    else:
        print(render_card(document))
    if not issues:
        print("spec: valid AgentCard (A2A 0.3.0)", file=sys.stderr if as_json else sys.stdout)
        return EXIT_OK
    try:
        read_peer_card(document)
        usable = "discovery can still read it as a peer card"
    except InvalidCard as exc:
        usable = f"discovery cannot use it either ({exc})"
    print(f"spec: NOT a valid AgentCard ({len(issues)} issue(s)); {usable}", file=sys.stderr)
    for issue in issues:
        print(f"  {clean(issue, 240)}", file=sys.stderr)
    return EXIT_NOT_FOUND
