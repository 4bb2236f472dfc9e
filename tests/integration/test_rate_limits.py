"""Per-peer rate limits on one node with two workers: a flooding peer is answered 429 with
Retry-After and -32005 while a polite peer beside it is served; the workers share each peer's
bucket, so a peer whose requests all reach one worker gets its whole limit; the catalog
override and the runtime setting apply to the next request, from the CLI, without a
restart."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from synthorg.delegation.client import A2AClient, RetryPolicy
from synthorg.generated.models import V1TextPart
from synthorg.store.catalog import PeerRecord
from tests.integration.conftest import AGENTS_YAML, api_key_headers, peer_client
from tests.integration.helpers import call
from tests.integration.live import LiveNode
from tests.support.node import cli

FLOOD, FLOOD_KEY = "flood", "key-flood-4c2e8a1b9d3f"
POLITE, POLITE_KEY = "polite", "key-polite-7b1d3f5a2c9e"
SINGLE, SINGLE_KEY = "single", "key-single-2d4f6a8c0e1b"
CLIENT, CLIENT_KEY = "our-client", "key-client-9e7c5a3b1d2f"
RATE, BURST = 4, 4  # per second and bucket, for the node as a whole, whichever worker serves
LEASE_SLACK = 2  # a lease (1 token at this rate) per worker, see gateway/ratelimit.py
CONFIG = (f"a2a:\n  enabled: true\n  allowed_peers: [{FLOOD}, {POLITE}, {SINGLE}, {CLIENT}]\n"
          f"  peer_rate_limit_per_second: {RATE}\n  peer_rate_limit_burst: {BURST}\n"
          f"{AGENTS_YAML}")
RATE_LIMITED = -32005


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir: Path = tmp_path_factory.mktemp("ratelimit")
    for peer, key in ((FLOOD, FLOOD_KEY), (POLITE, POLITE_KEY), (SINGLE, SINGLE_KEY),
                      (CLIENT, CLIENT_KEY)):
        cli(data_dir, "peers", "add", peer, "--endpoint", "http://127.0.0.1:9", stdin=key)
    # The polite peer's own limit (catalog override) is far above what it asks.
    cli(data_dir, "peers", "update", POLITE, "--rate-limit", "1000/s")
    cli(data_dir, "peers", "update", CLIENT, "--rate-limit", "1/s")
    with LiveNode(data_dir, CONFIG, env={"SYNTHORG_WORKERS": "2"}) as live:
        live.wait_for_events("a2a.node.started", 1, timeout=30)
        yield live


def skills(client: httpx.Client) -> httpx.Response:
    return call(client, "skills/query", {})


def flood_once(node: LiveNode, requests: int) -> tuple[int, list[httpx.Response], float]:
    """`requests` calls as fast as they go on several connections; (admitted, refusals, s)."""
    refused: list[httpx.Response] = []
    admitted = 0
    lock = threading.Lock()

    def worker(count: int) -> None:
        nonlocal admitted
        with peer_client(node, api_key_headers(FLOOD, FLOOD_KEY)) as client:
            for _ in range(count):
                response = skills(client)
                with lock:
                    if response.status_code == 429:
                        refused.append(response)
                    else:
                        assert response.status_code == 200, response.text
                        admitted += 1

    started = time.monotonic()
    threads = [threading.Thread(target=worker, args=(requests // 4,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return admitted, refused, time.monotonic() - started


def test_flooding_peer_is_refused_and_polite_peer_is_served(node: LiveNode) -> None:
    polite_statuses: list[int] = []
    done = threading.Event()

    def polite() -> None:
        with peer_client(node, api_key_headers(POLITE, POLITE_KEY)) as client:
            while not done.is_set() or len(polite_statuses) < 20:
                polite_statuses.append(skills(client).status_code)

    polite_thread = threading.Thread(target=polite)
    polite_thread.start()
    try:
        admitted, refused, elapsed = flood_once(node, 200)
    finally:
        done.set()
        polite_thread.join()

    # Two processes sharing the bucket: together they never admit more than the burst plus
    # what the rate refilled while the flood lasted, plus a lease per worker.
    assert admitted <= BURST + RATE * elapsed + LEASE_SLACK
    assert len(refused) >= 200 - admitted > 0
    for response in refused:
        assert int(response.headers["retry-after"]) >= 1
        assert response.headers["connection"] == "close"
        body = response.json()
        assert body["id"] is None and body["error"]["code"] == RATE_LIMITED
    assert set(polite_statuses) == {200}
    event = node.wait_for_event("a2a.inbound.rejected", reason="rate_limited")
    assert event["peer_name"] == FLOOD and event["status"] == 429


def test_a_peer_on_one_worker_gets_the_whole_limit(node: LiveNode) -> None:
    """One keep-alive connection is served by one worker throughout: the whole burst is
    admitted there (a per-worker share would refuse after half of it), and no more than the
    limit after it."""
    statuses = []
    started = time.monotonic()
    with peer_client(node, api_key_headers(SINGLE, SINGLE_KEY)) as client:
        for _ in range(BURST):
            statuses.append(skills(client).status_code)
        while statuses[-1] == 200:  # until refused (the 429 closes the connection)
            statuses.append(skills(client).status_code)
    elapsed = time.monotonic() - started
    assert statuses[:BURST] == [200] * BURST
    assert statuses.count(200) <= BURST + RATE * elapsed + LEASE_SLACK


def test_override_and_setting_apply_to_the_next_request(node: LiveNode) -> None:
    cli(node.data_dir, "peers", "update", FLOOD, "--rate-limit", "0")  # no limit for it
    admitted, refused, _ = flood_once(node, 80)
    assert (admitted, refused) == (80, [])

    cli(node.data_dir, "peers", "update", FLOOD, "--rate-limit", "default")
    admitted, refused, _ = flood_once(node, 80)
    assert refused

    cli(node.data_dir, "settings", "set", "a2a.peer_rate_limit_per_second", "0")
    try:
        admitted, refused, _ = flood_once(node, 80)
        assert (admitted, refused) == (80, [])
    finally:
        cli(node.data_dir, "settings", "reset", "a2a.peer_rate_limit_per_second")


def test_cli_refuses_a_malformed_rate_limit(node: LiveNode) -> None:
    result = cli(node.data_dir, "peers", "update", FLOOD, "--rate-limit", "fast", check=False)
    assert result.returncode != 0 and "invalid rate limit" in result.stderr
    result = cli(node.data_dir, "peers", "update", "nobody", "--rate-limit", "1/s", check=False)
    assert result.returncode != 0 and "no peer named" in result.stderr


def test_our_client_waits_as_the_limiting_node_says(node: LiveNode) -> None:
    """Our own client against this limiting node: once the peer's burst is spent, a 429's
    Retry-After is what the client waits before its retry, which is then admitted."""
    record = PeerRecord(CLIENT, node.url, "api_key", CLIENT_KEY, "", "")
    waits: list[float] = []

    async def sleep(seconds: float) -> None:  # the real wait, noted
        waits.append(seconds)
        await asyncio.sleep(seconds)

    async def until_told_to_wait() -> int:
        client = A2AClient(record, CLIENT, lambda: 30.0, retry=RetryPolicy(attempts=3),
                           sleep=sleep)
        for calls in range(1, 3 * BURST + 1):
            task = await client.send_message([V1TextPart(text="hi")],
                                             agent_id="echo")
            assert task.status.state == "TASK_STATE_COMPLETED"
            if waits:
                return calls
        return 0

    assert asyncio.run(until_told_to_wait()) > 1
    assert waits == [1.0]  # Retry-After: 1 (a token a second), within the client's cap
    event = node.wait_for_event("a2a.inbound.rejected", reason="rate_limited",
                                peer_name=CLIENT)
    assert event["retry_after"] == 1
