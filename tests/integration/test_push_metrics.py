"""Push metrics on a live node, scraped from GET /metrics and parsed with prometheus_client's
own parser: delivery attempts by result, and the outbox depth (deliveries owed) read from the
store at scrape time, while a push waits for its retry and once it is delivered."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.helpers import call, expect_result, message
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer
from tests.support.scripted_server import Answer, ScriptedServer

PEER, KEY = "peer-push-metrics", "key-push-metrics-2b4d6f8a0c1e"
TOKEN = "admin-token-for-push-metrics-9c7e5a3b1d0f"
CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{PEER}]
  push_allow_private_networks: true
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
"""


def scrape(node: LiveNode) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with httpx.Client(base_url=node.url) as client:
        response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.text
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(response.text)
            for s in family.samples}


def attempts(found: dict[tuple[str, frozenset[tuple[str, str]]], float], result: str) -> float:
    return found.get(("synthorg_push_deliveries_total", frozenset({("result", result)})), 0.0)


def depth(found: dict[tuple[str, frozenset[tuple[str, str]]], float]) -> float:
    return found[("synthorg_push_outbox_depth", frozenset())]


def test_push_attempts_by_result_and_the_outbox_depth(tmp_path: Path) -> None:
    add_peer(tmp_path, PEER, KEY)
    with ScriptedServer() as receiver, LiveNode(
        tmp_path, CONFIG, env={"SYNTHORG_ADMIN_TOKEN": TOKEN}
    ) as node, node.client(PEER, KEY) as client:
        assert depth(scrape(node)) == 0
        hold = threading.Event()
        # the first attempt fails; the retry is held until the owed push has been scraped
        receiver.script.extend([Answer(503), Answer(204, hold=hold)])
        params = {"message": message("hi", agent_id="echo"),
                  "configuration": {"pushNotificationConfig": {"url": receiver.url + "/h"}}}
        task = expect_result(call(client, "message/send", params))
        node.wait_for_event("a2a.push.retry_scheduled", task_id=task["id"])
        owed = scrape(node)
        assert depth(owed) == 1
        assert attempts(owed, "retry") == 1 and attempts(owed, "delivered") == 0
        hold.set()
        node.wait_for_event("a2a.push.delivered", task_id=task["id"])
        done = scrape(node)
    assert depth(done) == 0
    assert attempts(done, "delivered") == 1 and attempts(done, "retry") == 1
    assert attempts(done, "failed") == 0
