"""One shared gateway node for the suite (session scope) and a client per peer.

The node runs as a real subprocess on an ephemeral loopback port. Its catalog is written
before start through the store (tests/support/catalog.py), exactly as the CLI would.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

LIMIT = 32 * 1024  # max_request_body_bytes; room for a 10000-deep nested list, still small
MAX_PARTS = 3

PEER_A, KEY_A = "peer-a", "key-a-7f3e1c9b2d4a"
PEER_B, KEY_B = "peer-b", "key-b-0c8d2e6f4a1b"
PEER_BEARER, KEY_BEARER = "peer-bearer", "key-bearer-5e9a3c7d1f2b"
PEER_EVENTS, KEY_EVENTS = "peer-events", "key-events-2b6d8f0a4c3e"
PEER_GHOST = "peer-ghost"  # allowlisted, but no catalog record
PEER_LATE = "peer-late"  # allowlisted; its record is written while the node runs
PEER_CLI = "peer-cli"  # allowlisted; its record is written with the CLI while the node runs
PEER_UNLISTED, KEY_UNLISTED = "peer-unlisted", "key-unlisted-9d1f3b5a7c0e"  # record, not listed
ALL_SECRETS = (KEY_A, KEY_B, KEY_BEARER, KEY_EVENTS, KEY_UNLISTED)

AGENTS_YAML = """\
agents:
  - {id: echo, name: Echo, executor: {kind: echo}}
  - {id: parker, name: Parker, executor: {kind: park}}
"""

ALLOWED_PEERS = (PEER_A, PEER_B, PEER_BEARER, PEER_EVENTS, PEER_GHOST, PEER_LATE, PEER_CLI)

GATEWAY_CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{", ".join(ALLOWED_PEERS)}]
  max_request_body_bytes: {LIMIT}
  max_message_parts: {MAX_PARTS}
{AGENTS_YAML}"""


def peer_client(node: LiveNode, headers: dict[str, str] | None = None) -> httpx.Client:
    return httpx.Client(
        base_url=node.url, headers=headers or {}, timeout=30.0, follow_redirects=False
    )


def api_key_headers(peer: str, key: str) -> dict[str, str]:
    return {"X-A2A-Peer-Name": peer, "X-API-Key": key}


@pytest.fixture(scope="session")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir: Path = tmp_path_factory.mktemp("gateway")
    node = LiveNode(data_dir, GATEWAY_CONFIG)
    for peer, key in (
        (PEER_A, KEY_A),
        (PEER_B, KEY_B),
        (PEER_EVENTS, KEY_EVENTS),
        (PEER_UNLISTED, KEY_UNLISTED),
    ):
        add_peer(data_dir, peer, key)
    add_peer(data_dir, PEER_BEARER, KEY_BEARER, scheme="bearer")
    with node:
        yield node


@pytest.fixture(scope="session")
def anon(gateway: LiveNode) -> Iterator[httpx.Client]:
    """No peer headers at all."""
    with peer_client(gateway) as client:
        yield client


@pytest.fixture(scope="session")
def client_a(gateway: LiveNode) -> Iterator[httpx.Client]:
    with peer_client(gateway, api_key_headers(PEER_A, KEY_A)) as client:
        yield client


@pytest.fixture(scope="session")
def client_b(gateway: LiveNode) -> Iterator[httpx.Client]:
    with peer_client(gateway, api_key_headers(PEER_B, KEY_B)) as client:
        yield client


@pytest.fixture(scope="session")
def client_events(gateway: LiveNode) -> Iterator[httpx.Client]:
    """Used only by the event tests, so their events are easy to tell apart."""
    with peer_client(gateway, api_key_headers(PEER_EVENTS, KEY_EVENTS)) as client:
        yield client
