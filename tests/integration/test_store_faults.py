"""A replica whose PostgreSQL database goes away, at start and while serving.

The node reaches the database through a TCP relay the test cuts and restores
(tests/support/tcp_proxy.py): cut, every connection drops and new ones are refused, as when
the database host or the link fails. The node must wait at start (probes answering, the log
saying why), answer -32603 within its bounds while the database is gone (no hang), name the
cause in an event, and recover by itself when it returns, with nothing acknowledged lost.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from cryptography.fernet import Fernet

from tests.integration.conftest import AGENTS_YAML, KEY_A, PEER_A, api_key_headers
from tests.integration.helpers import (
    INTERNAL_ERROR,
    Json,
    expect_result,
    get_task,
    message,
    park_task,
    send,
)
from tests.integration.live import LiveNode
from tests.support.node import cli
from tests.support.tcp_proxy import TcpProxy

CONFIG = f"a2a:\n  enabled: true\n  allowed_peers: [{PEER_A}]\n{AGENTS_YAML}"
BOUND = 2.0  # the node's connect and statement timeouts in these tests, seconds


class Listening(LiveNode):
    start_event = "a2a.node.listening"  # it listens before the database answers


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    parts = urlsplit("postgresql://127.0.0.1:5432")
    with TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5432) as relay:
        yield relay


def env_through(proxy: TcpProxy, url: str) -> dict[str, str]:
    parts = urlsplit(url)
    netloc = f"{parts.username}@127.0.0.1:{proxy.port}" if parts.username else \
        f"127.0.0.1:{proxy.port}"
    return {
        "SYNTHORG_DATABASE_URL": parts._replace(netloc=netloc).geturl(),
        "SYNTHORG_SECRET_KEY": Fernet.generate_key().decode(),
        "SYNTHORG_DATABASE_CONNECT_TIMEOUT": str(BOUND),
        "SYNTHORG_DATABASE_STATEMENT_TIMEOUT": str(BOUND),
    }


def add_peer(data_dir: Path, env: dict[str, str]) -> None:
    cli(data_dir, "peers", "add", PEER_A, "--endpoint", "http://127.0.0.1:9", stdin=KEY_A,
        env=env)


def probes(node: LiveNode) -> tuple[int, int]:
    with httpx.Client(base_url=node.url, timeout=10) as anon:
        return anon.get("/healthz").status_code, anon.get("/readyz").status_code


def test_unreachable_at_start_the_node_waits_and_serves_once_it_answers(
    tmp_path: Path, postgres_database: str, proxy: TcpProxy
) -> None:
    env = env_through(proxy, postgres_database)
    add_peer(tmp_path / "cli", env)
    proxy.cut()
    with Listening(tmp_path / "node", CONFIG, env=env) as node:
        waiting = node.wait_for_event("store.waiting")
        assert "unavailable" in waiting["reason"] and waiting["retry_in"] > 0
        assert probes(node) == (200, 503)
        with httpx.Client(base_url=node.url, headers=api_key_headers(PEER_A, KEY_A)) as c:
            refused = send(c, message("too early"))
        assert refused.status_code == 503 and refused.json()["error"]["code"] == INTERNAL_ERROR
        text = "\n".join(node.lines)
        # Where it cannot connect, in words; never the URL (it may hold a password).
        assert f"cannot connect to 127.0.0.1:{proxy.port}" in waiting["reason"]
        assert "postgresql://" not in text
        proxy.restore()
        node.wait_for_event("a2a.node.started", timeout=30)
        assert probes(node) == (200, 200)
        with httpx.Client(base_url=node.url, headers=api_key_headers(PEER_A, KEY_A)) as c:
            expect_result(send(c, message("now")))


def test_lost_while_serving_answers_within_bounds_and_recovers_by_itself(
    tmp_path: Path, postgres_database: str, proxy: TcpProxy
) -> None:
    env = env_through(proxy, postgres_database)
    add_peer(tmp_path / "cli", env)
    with LiveNode(tmp_path / "node", CONFIG, env=env) as node, \
            httpx.Client(base_url=node.url, headers=api_key_headers(PEER_A, KEY_A),
                         timeout=30) as c:
        before: Json = park_task(c)
        done = expect_result(send(c, message("acknowledged before the cut")))
        proxy.cut()
        for attempt in range(3):
            started = time.monotonic()
            response = get_task(c, before["id"], request_id=attempt)
            took = time.monotonic() - started
            assert response.status_code == 500, response.text
            assert response.json()["error"] == {"code": INTERNAL_ERROR, "message": "Internal error"}
            assert took < 3 * BOUND, took  # bounded: connect, wait and statement timeouts
        # A 1.0 caller (A2A-Version: 1.0) is answered in 1.0's shape: error.data is 1.0's array.
        v1 = c.post("/api/v1/a2a/", headers={"A2A-Version": "1.0"}, json={
            "jsonrpc": "2.0", "id": 9, "method": "GetTask", "params": {"id": before["id"]}})
        assert v1.status_code == 500, v1.text
        assert v1.json()["error"] == {"code": INTERNAL_ERROR, "message": "Internal error", "data": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "INTERNAL_ERROR",
             "domain": "synthorg"}]}
        assert probes(node) == (200, 503)
        lost = node.wait_for_event("store.unavailable")
        assert lost["reason"] and "postgresql://" not in json.dumps(lost)
        proxy.restore()
        # Recovered without a restart; nothing acknowledged before the cut was lost.
        assert _answers(c, before["id"]), "the node did not recover after the database returned"
        node.wait_for_event("store.available")
        assert expect_result(get_task(c, done["id"]))["status"]["state"] == "completed"
        follow = expect_result(send(c, message("after", task_id=before["id"])))
        assert follow["status"]["state"] == "input-required"
        assert probes(node) == (200, 200)


def _answers(c: httpx.Client, task_id: str, timeout: float = 30.0) -> bool:
    """Whether the node answers a read within `timeout` (a dropped pooled connection may
    fail one request before a fresh one is opened)."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while time.monotonic() < deadline:
        if get_task(c, task_id).status_code == 200:
            return True
        pause.wait(0.05)
    return False
