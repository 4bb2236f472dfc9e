"""`GET /api/v1/admin/status` and `synthorg-a2a status` against a real node: the release,
uptime, store and schema version, workers, peers, tasks by state and the push outbox, as
an operator asks them first; and a plain answer when no node listens."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from synthorg.admin.token import TOKEN_ENV, TOKEN_FILENAME
from synthorg.contract.spec import bundled_openapi
from synthorg.store.sqlite.schema import SCHEMA_VERSION
from tests.integration.helpers import create_task, park_task
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer
from tests.support.node import cli

CALLER, CALLER_KEY = "caller", "caller-key-status-5e1a"
CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{CALLER}, other, third]
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
  - {{id: parker, name: Parker, executor: {{kind: park}}}}
"""
STATES = ["submitted", "working", "input-required", "auth-required", "completed", "canceled",
          "failed", "rejected"]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir = tmp_path_factory.mktemp("status-live")
    add_peer(data_dir, CALLER, CALLER_KEY)
    # The node and the CLI find the token in the data dir, as an operator's would.
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(TOKEN_ENV, raising=False)
        with LiveNode(data_dir, CONFIG) as live, live.client(CALLER, CALLER_KEY) as client:
            create_task(client, "one")
            create_task(client, "two")
            park_task(client)
            yield live


def admin_status(node: LiveNode) -> dict[str, Any]:
    token = (node.data_dir / TOKEN_FILENAME).read_text().strip()
    response = httpx.get(f"{node.url}/api/v1/admin/status",
                         headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_admin_status_answers_what_an_operator_asks_first(node: LiveNode) -> None:
    status = admin_status(node)
    assert status["version"] and status["version"] != "unknown"
    assert status["specVersion"] == bundled_openapi()["info"]["version"]
    assert status["uptimeSeconds"] >= 0 and status["startedAt"].endswith("Z")
    assert status["store"] == {"backend": "sqlite", "schemaVersion": SCHEMA_VERSION,
                               "schemaLatest": SCHEMA_VERSION}
    assert status["workers"] == 1
    assert status["peers"] == {"allowed": 3, "inCatalog": 1}
    assert list(status["tasks"]) == STATES
    assert status["tasks"]["completed"] == 2 and status["tasks"]["input-required"] == 1
    assert sum(status["tasks"].values()) == 3
    assert status["pushOutboxDepth"] == 0
    assert status["a2aEnabled"] is True


def test_status_command_finds_the_local_node_and_its_token(node: LiveNode) -> None:
    # No --url, no token in the environment: the node this environment names, with the
    # token file the node wrote in its data dir.
    env = {"SYNTHORG_BACKEND_HOST": "127.0.0.1", "SYNTHORG_BACKEND_PORT": str(node.port)}
    shown = cli(node.data_dir, "status", env=env)
    lines = dict(line.split(":", 1) for line in shown.stdout.splitlines())
    assert lines["node"].strip() == node.url
    assert lines["store"].strip() == f"sqlite, schema {SCHEMA_VERSION}"
    assert lines["workers"].strip() == "1"
    assert lines["peers"].strip() == "3 allowed, 1 in the catalog"
    assert lines["tasks"].strip() == "1 input-required, 2 completed"
    assert lines["push outbox"].strip() == "0 owed"
    assert lines["version"].strip().startswith("synthorg-a2a ")


def test_status_json_is_the_admin_document(node: LiveNode, tmp_path: Path) -> None:
    token_file = node.data_dir / TOKEN_FILENAME
    shown = cli(tmp_path, "status", "--url", node.url, "--token-file", str(token_file),
                "--json")
    document = json.loads(shown.stdout)
    assert document["peers"] == {"allowed": 3, "inCatalog": 1}
    assert document["store"]["backend"] == "sqlite"


def test_status_without_a_node_says_so(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token_file = tmp_path / "token"
    token_file.write_text("a" * 43)
    shown = cli(tmp_path, "status", "--url", f"http://127.0.0.1:{port}",
                "--token-file", str(token_file), check=False)
    assert shown.returncode == 3
    assert shown.stderr.startswith(f"error: cannot reach a node at http://127.0.0.1:{port}")
    assert "is it running?" in shown.stderr and "Traceback" not in shown.stderr


# -- what a node says to the person who starts it, and to a browser ---------------------------


def test_root_points_a_browser_to_the_console(node: LiveNode) -> None:
    """With the console on (the default) a browser at / lands on its sign-in form; with it
    off, on /docs (tests/integration/test_console_http.py)."""
    for method in ("GET", "HEAD"):
        response = httpx.request(method, f"{node.url}/")
        assert response.status_code == 302
        assert response.headers["location"] == "console"
        assert response.url.join(response.headers["location"]) == f"{node.url}/console"
    followed = httpx.get(f"{node.url}/", follow_redirects=True)
    assert followed.status_code == 401 and str(followed.url) == f"{node.url}/console"
    assert "text/html" in followed.headers["content-type"]


def test_serve_says_where_it_serves_and_a_clean_stop_is_an_event(tmp_path: Path) -> None:
    live = LiveNode(tmp_path / "node", CONFIG).start()
    try:
        base = f"http://127.0.0.1:{live.port}"
        said = [line for line in live.lines if line.startswith("serving on ")]
        assert said == [f"serving on {base}: A2A at {base}/api/v1/a2a/, API docs at {base}/docs"]
        assert live.events("a2a.node.stopped") == []
        # Serving (its signal handlers installed): a SIGTERM now is a clean shutdown.
        assert httpx.get(f"{base}/healthz", timeout=60).status_code == 200
    finally:
        live.stop()  # SIGTERM: a clean shutdown
    (stopped,) = live.events("a2a.node.stopped")
    assert (stopped["host"], stopped["port"], stopped["workers"]) == ("127.0.0.1", live.port, 1)
    assert stopped["uptime_seconds"] >= 0
