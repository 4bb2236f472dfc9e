"""One `a2a.inbound.completed` event per HTTP request: operation, method, status, peer,
duration and bytes, whatever step answered it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import AGENTS_YAML, api_key_headers, peer_client
from tests.integration.helpers import envelope
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

PEER, KEY = "peer-access", "key-access-3e5a7c9b1d2f"
CONFIG = f"a2a:\n  enabled: true\n  allowed_peers: [{PEER}]\n{AGENTS_YAML}"
COMPLETED = "a2a.inbound.completed"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir: Path = tmp_path_factory.mktemp("access")
    add_peer(data_dir, PEER, KEY)
    with LiveNode(data_dir, CONFIG) as live:
        yield live


def completed_after(node: LiveNode, before: int, count: int) -> list[dict[str, object]]:
    return node.wait_for_events(COMPLETED, before + count)[before:]


def test_each_request_has_one_event_with_its_method_status_peer_and_bytes(
    node: LiveNode,
) -> None:
    before = len(node.events(COMPLETED))
    body = json.dumps(envelope("tasks/get", {"id": "no-such-task"})).encode()
    with peer_client(node, api_key_headers(PEER, KEY)) as client:
        found = client.post("/api/v1/a2a/", content=body,
                            headers={"Content-Type": "application/json"})
        unknown = client.post("/api/v1/a2a/", json=envelope("no/such", {}))
    with httpx.Client(base_url=node.url) as anon:
        refused = anon.post("/api/v1/a2a/", json=envelope("tasks/get", {"id": "x"}))
        health = anon.get("/healthz")
    # A sentinel request, last: once its event is written every earlier one is too.
    with httpx.Client(base_url=node.url) as anon:
        anon.get("/healthz")
    events = completed_after(node, before, 5)
    assert len(node.events(COMPLETED)) == before + 5  # one each, no more

    get, bad_method, unauthenticated, live, _ = events
    assert get["operation"] == "gateway.rpc" and get["method"] == "tasks/get"
    assert (get["status"], get["peer_name"]) == (200, PEER)
    assert get["bytes_in"] == len(body) and get["bytes_out"] == len(found.content)
    assert isinstance(get["duration_ms"], float) and get["duration_ms"] >= 0
    assert bad_method["method"] == "other" and bad_method["bytes_out"] == len(unknown.content)
    assert unauthenticated["status"] == refused.status_code == 401
    assert unauthenticated["peer_name"] is None and unauthenticated["method"] is None
    assert unauthenticated["reason"] == "missing_peer_name"
    assert unauthenticated["bytes_in"] == 0  # refused on its headers: the body is never read
    assert live["operation"] == "handlers.health.live" and live["status"] == health.status_code
