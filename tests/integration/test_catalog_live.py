"""DESIGN §7: catalog edits made while a node runs apply to its next request, no restart.

The store is written from this process (as `synthorg-a2a peers ...` does from its own) while
the shared gateway keeps running; gate 3 must follow every change on the very next call.
"""

from __future__ import annotations

import httpx

from tests.integration.conftest import ALL_SECRETS, PEER_CLI, PEER_LATE, api_key_headers
from tests.integration.helpers import (
    TASK_NOT_FOUND,
    UNAUTHENTICATED,
    envelope,
    expect_error,
)
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer, remove_peer
from tests.support.node import cli

FIRST_KEY = "key-late-first-4e2a"
ROTATED_KEY = "key-late-rotated-8b1d"
CLI_KEY = "key-cli-0f6e3a9c"


def attempt(anon: httpx.Client, peer: str, key: str) -> httpx.Response:
    body = envelope("tasks/get", {"id": "no-such-task"})
    return anon.post("/api/v1/a2a/", json=body, headers=api_key_headers(peer, key))


def expect_admitted(response: httpx.Response) -> None:
    expect_error(response, code=TASK_NOT_FOUND, request_id=1)


def expect_unauthenticated(response: httpx.Response) -> None:
    expect_error(response, status=401, code=UNAUTHENTICATED)


def test_added_rotated_and_removed_records_apply_without_restart(
    gateway: LiveNode, anon: httpx.Client
) -> None:
    expect_unauthenticated(attempt(anon, PEER_LATE, FIRST_KEY))  # allowlisted, no record

    add_peer(gateway.data_dir, PEER_LATE, FIRST_KEY)
    expect_admitted(attempt(anon, PEER_LATE, FIRST_KEY))

    add_peer(gateway.data_dir, PEER_LATE, ROTATED_KEY)
    expect_unauthenticated(attempt(anon, PEER_LATE, FIRST_KEY))
    expect_admitted(attempt(anon, PEER_LATE, ROTATED_KEY))

    assert remove_peer(gateway.data_dir, PEER_LATE)
    expect_unauthenticated(attempt(anon, PEER_LATE, ROTATED_KEY))


def test_peer_added_with_the_cli_is_admitted_and_its_secret_never_printed(
    gateway: LiveNode, anon: httpx.Client
) -> None:
    result = cli(
        gateway.data_dir,
        "peers",
        "add",
        PEER_CLI,
        "--endpoint",
        "http://127.0.0.1:9",
        stdin=CLI_KEY + "\n",
    )
    assert CLI_KEY not in result.stdout + result.stderr
    expect_admitted(attempt(anon, PEER_CLI, CLI_KEY))


def test_cli_peer_list_never_prints_secrets(gateway: LiveNode) -> None:
    listing = cli(gateway.data_dir, "peers", "list")
    assert "peer-a" in listing.stdout
    for secret in (*ALL_SECRETS, CLI_KEY):
        assert secret not in listing.stdout + listing.stderr
