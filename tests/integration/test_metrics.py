"""GET /metrics on one node with two workers, scraped and parsed with prometheus_client's own
parser before and after known traffic: every scrape, whichever worker answers it, counts every
worker's requests. Behind the admin token unless metrics_public; 404 when metrics are off."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import AGENTS_YAML, api_key_headers
from tests.integration.helpers import envelope
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

PEER, KEY = "peer-metrics", "key-metrics-8a2c4e6b0d1f"
STRANGER = "peer-stranger"  # not allowlisted
TOKEN = "admin-token-for-metrics-tests-5f1e9d3c7b2a"
CONFIG = f"a2a:\n  enabled: true\n  allowed_peers: [{PEER}]\n{AGENTS_YAML}"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def start(data_dir: Path, config: str, workers: int) -> LiveNode:
    add_peer(data_dir, PEER, KEY)
    node = LiveNode(data_dir, config, env={"SYNTHORG_WORKERS": str(workers),
                                           "SYNTHORG_ADMIN_TOKEN": TOKEN})
    node.start()
    node.wait_for_events("a2a.node.started", 1, timeout=30)
    return node


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    live = start(tmp_path_factory.mktemp("metrics"), CONFIG, workers=2)
    try:
        yield live
    finally:
        live.stop()


def scrape(node: LiveNode, token: str | None = TOKEN) -> httpx.Response:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    # A new connection: any worker answers; one still starting (on a busy machine, seconds
    # after the node said it started) answers once it serves.
    with httpx.Client(base_url=node.url, timeout=60) as client:
        return client.get("/metrics", headers=headers)


def samples(node: LiveNode) -> Samples:
    response = scrape(node)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    found: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(found: Samples, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def test_scrapes_count_every_workers_traffic(node: LiveNode) -> None:
    before = samples(node)
    body = envelope("tasks/get", {"id": "no-such-task"})
    for _ in range(20):  # a connection each: the kernel spreads them over both workers
        with httpx.Client(base_url=node.url, headers=api_key_headers(PEER, KEY)) as client:
            assert client.post("/api/v1/a2a/", json=body).status_code == 200
    for _ in range(3):
        with httpx.Client(base_url=node.url, headers=api_key_headers(STRANGER, KEY)) as client:
            assert client.post("/api/v1/a2a/", json=body).status_code == 403

    tasks_get = {"operation": "gateway.rpc", "method": "tasks/get", "dialect": "0.3",
                 "status": "200"}
    refused = {"operation": "gateway.rpc", "method": "none", "dialect": "0.3",
               "status": "403"}
    afters = [samples(node) for _ in range(4)]  # whichever worker answers, the same totals
    for after in afters:
        assert value(after, "synthorg_requests_total", **tasks_get) - value(
            before, "synthorg_requests_total", **tasks_get) == 20
        assert value(after, "synthorg_requests_total", **refused) - value(
            before, "synthorg_requests_total", **refused) == 3
        assert value(after, "synthorg_gate_refusals_total", reason="peer_not_allowed") - value(
            before, "synthorg_gate_refusals_total", reason="peer_not_allowed") == 3
        count = "synthorg_request_duration_seconds_count"
        assert value(after, count, method="tasks/get") - value(
            before, count, method="tasks/get") == 20
        assert value(after, "synthorg_store_call_duration_seconds_count", operation="get") >= 20
        assert ("synthorg_tasks", frozenset({("state", "completed")})) in after
    # No label carries a name outside the allowlist.
    assert not any(STRANGER in dict(labels).values() for _, labels in afters[-1])


def test_metrics_need_the_admin_token_by_default(node: LiveNode) -> None:
    assert scrape(node, token=None).status_code == 401
    assert scrape(node, token="wrong").status_code == 401
    with httpx.Client(base_url=node.url, headers=api_key_headers(PEER, KEY)) as client:
        assert client.get("/metrics").status_code == 401  # a peer credential never opens it


def test_public_metrics_and_metrics_off(tmp_path: Path) -> None:
    public = start(tmp_path / "public", CONFIG + "observability:\n  metrics_public: true\n", 1)
    try:
        assert scrape(public, token=None).status_code == 200
    finally:
        public.stop()
    off = start(tmp_path / "off", CONFIG + "observability:\n  metrics: false\n", 1)
    try:
        assert scrape(off).status_code == 404
    finally:
        off.stop()


def test_no_created_series_in_one_worker_or_several(tmp_path: Path, node: LiveNode) -> None:
    single = start(tmp_path / "single", CONFIG, 1)
    try:
        for live in (single, node):
            with httpx.Client(base_url=live.url, timeout=30) as client:
                client.post("/api/v1/a2a/", json={})  # refused: counted, with its latency
            text = scrape(live).text
            assert "synthorg_requests_total{" in text
            assert "_created" not in text, [ln for ln in text.splitlines() if "_created" in ln]
    finally:
        single.stop()


def test_the_10_dialect_methods_are_labelled_by_name(node: LiveNode) -> None:
    before = samples(node)
    headers = {**api_key_headers(PEER, KEY), "A2A-Version": "1.0"}
    with httpx.Client(base_url=node.url, headers=headers) as client:
        answer = client.post("/api/v1/a2a/", json=envelope("GetTask", {"id": "no-such-task"}))
        assert answer.status_code == 200, answer.text
    labels = {"operation": "gateway.rpc", "method": "GetTask", "dialect": "1.0",
              "status": "200"}
    # Whichever worker answers the scrape, the request it counted is there.
    after = samples(node)
    assert value(after, "synthorg_requests_total", **labels) - value(
        before, "synthorg_requests_total", **labels) == 1
    assert value(after, "synthorg_request_duration_seconds_count", method="GetTask") >= 1


def test_one_worker_counts_n_requests_in_every_family(tmp_path: Path) -> None:
    """Values after N requests on a node of one process: the counter, the histogram's count,
    its +Inf bucket and the store calls they made, and no event line dropped."""
    single = start(tmp_path / "one", CONFIG, 1)
    try:
        before = samples(single)
        body = envelope("tasks/get", {"id": "no-such-task"})
        with httpx.Client(base_url=single.url, headers=api_key_headers(PEER, KEY)) as client:
            for _ in range(7):
                assert client.post("/api/v1/a2a/", json=body).status_code == 200
        after = samples(single)
    finally:
        single.stop()
    tasks_get = {"operation": "gateway.rpc", "method": "tasks/get", "dialect": "0.3",
                 "status": "200"}

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("synthorg_requests_total", **tasks_get) == 7
    assert grew("synthorg_request_duration_seconds_count", method="tasks/get") == 7
    assert grew("synthorg_request_duration_seconds_bucket", method="tasks/get", le="+Inf") == 7
    assert grew("synthorg_request_duration_seconds_sum", method="tasks/get") > 0
    assert grew("synthorg_store_call_duration_seconds_count", operation="get") >= 7
    buckets = [v for (name, labels), v in sorted(after.items(), key=lambda item: item[1])
               if name == "synthorg_request_duration_seconds_bucket"
               and ("method", "tasks/get") in labels]
    assert len(buckets) == 15  # every bucket, cumulative
    assert ("synthorg_event_lines_dropped_total", frozenset()) in after
    assert value(after, "synthorg_event_lines_dropped_total") == 0


def test_every_worker_reports_its_dropped_event_lines(node: LiveNode) -> None:
    for _ in range(3):  # whichever worker answers: the summed count, none dropped
        found = samples(node)
        assert ("synthorg_event_lines_dropped_total", frozenset()) in found
        assert value(found, "synthorg_event_lines_dropped_total") == 0
