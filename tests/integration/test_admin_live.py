"""The admin API and `synthorg-a2a settings|peers` against real nodes (separate processes on
loopback ports): each runtime setting changed through the API and through the CLI, with its
effect observed on the very next request and no restart; the admin token and peer credentials
kept apart both ways; concurrent writes; remote CLI management; the generated token file.

Nothing here sleeps: requests are synchronous, events are awaited on the node's stderr, the slow
peer blocks on an Event, and concurrent writers start together on a Barrier.
"""

from __future__ import annotations

import json
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from synthorg.admin.token import TOKEN_ENV, TOKEN_FILENAME
from tests.integration.helpers import (
    INVALID_PARAMS,
    UNAUTHENTICATED,
    envelope,
    expect_error,
    expect_result,
    message,
    send,
)
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer
from tests.support.node import cli
from tests.support.scripted_server import ScriptedServer

ADMIN_TOKEN = "live-admin-token-LEAKCHECK-4d7f0b2e9a"
CALLER, CALLER_KEY = "caller", "caller-key-LEAKCHECK-81c3"
TWIN = "twin"  # its catalog secret is the admin token, written past the API
CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{CALLER}, {TWIN}]
  max_message_parts: 3
agents:
  - {{id: echo, name: Echo, skills: [{{id: echo, name: Echo}}], executor: {{kind: echo}}}}
"""
ADMIN = "/api/v1/admin"
CLOSED = "http://127.0.0.1:9"  # nothing listens on the discard port: card fetches fail fast
FAST = 10.0  # seconds: far below the 30 s default timeout, so a bound was clearly applied


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir = tmp_path_factory.mktemp("admin-live")
    add_peer(data_dir, CALLER, CALLER_KEY, endpoint=CLOSED)
    live = LiveNode(data_dir, CONFIG, env={TOKEN_ENV: ADMIN_TOKEN})
    with live:
        yield live
    for line in live.lines:
        assert ADMIN_TOKEN not in line and CALLER_KEY not in line


@pytest.fixture(scope="module")
def admin(node: LiveNode) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=node.url + ADMIN, timeout=30.0,
                      headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        yield client


@pytest.fixture(scope="module")
def peer(node: LiveNode) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=node.url, timeout=60.0,
                      headers={"X-A2A-Peer-Name": CALLER, "X-API-Key": CALLER_KEY}) as client:
        yield client


def local_cli(node: LiveNode, *args: str, stdin: str | None = None
              ) -> subprocess.CompletedProcess[str]:
    """The CLI on the running node's data dir, as an operator on its machine would use it."""
    result = cli(node.data_dir, *args, stdin=stdin, check=False, env={TOKEN_ENV: ADMIN_TOKEN})
    assert ADMIN_TOKEN not in result.stdout + result.stderr
    return result


def remote_cli(node: LiveNode, workdir: Path, *args: str, stdin: str | None = None,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI against the node's URL, from a machine without its data dir."""
    result = cli(workdir / "no-data-here", *args, "--url", node.url, stdin=stdin, check=False,
                 env={TOKEN_ENV: ADMIN_TOKEN, **(env or {})})
    assert ADMIN_TOKEN not in result.stdout + result.stderr
    assert not (workdir / "no-data-here").exists()  # remote mode never touches a data dir
    return result


def parts_call(peer: httpx.Client, count: int) -> httpx.Response:
    return send(peer, message(*[f"part {i}" for i in range(count)]))


def expect_parts_limit(response: httpx.Response, limit: int) -> None:
    error = expect_error(response, code=INVALID_PARAMS, request_id=1)
    assert error["data"] == {"limit": limit}, error


def put(admin: httpx.Client, name: str, value: Any) -> httpx.Response:
    return admin.put(f"/settings/{name}", json={"value": value})


def audit_lines(node: LiveNode, event: str | None = None) -> list[dict[str, Any]]:
    """The node's audit trail, read as an operator would: `synthorg-a2a audit list --json`."""
    found: list[dict[str, Any]] = json.loads(cli(node.data_dir, "audit", "list", "--json").stdout)
    return [e for e in found if event is None or e["event"] == event]


# -- each key, through the API and through the CLI, applied on the next request -------------------


def test_max_message_parts_bounds_the_next_send(
    node: LiveNode, admin: httpx.Client, peer: httpx.Client
) -> None:
    expect_result(parts_call(peer, 3))  # config.yaml: 3
    expect_parts_limit(parts_call(peer, 4), 3)

    assert put(admin, "a2a.max_message_parts", 2).json()["source"] == "runtime"
    expect_parts_limit(parts_call(peer, 3), 2)
    expect_result(parts_call(peer, 2))
    event = node.wait_for_event("admin.setting.changed", key="a2a.max_message_parts", new=2)
    assert (event["via"], event["old"], event["old_source"]) == ("admin_api", 3, "config")

    result = local_cli(node, "settings", "set", "a2a.max_message_parts", "4")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "a2a.max_message_parts = 4 (runtime; was 2 from runtime)\n"
    expect_result(parts_call(peer, 4))
    expect_parts_limit(parts_call(peer, 5), 4)
    assert audit_lines(node, "admin.setting.changed")[-1]["via"] == "cli"

    assert admin.delete("/settings/a2a.max_message_parts").json()["value"] == 3
    expect_parts_limit(parts_call(peer, 4), 3)


def test_the_audit_trail_records_the_socket_address_not_a_forwarded_one(
    node: LiveNode, admin: httpx.Client
) -> None:
    # From loopback, where a trusted proxy would sit: the header is still not believed.
    answer = admin.put("/settings/a2a.max_message_parts", json={"value": 5},
                       headers={"X-Forwarded-For": "203.0.113.9"})
    assert answer.status_code == 200, answer.text
    try:
        change = audit_lines(node, "admin.setting.changed")[-1]
        assert (change["key"], change["new"]) == ("a2a.max_message_parts", 5)
        assert change["client"] == "127.0.0.1"
    finally:
        admin.delete("/settings/a2a.max_message_parts")


def test_client_timeout_bounds_the_next_outbound_call(
    node: LiveNode, admin: httpx.Client, peer: httpx.Client
) -> None:
    release = threading.Event()
    server = ScriptedServer()
    server.card_hold = release  # the card fetch is what times out
    with server:
        try:
            for name in ("slow-api", "slow-cli"):
                created = admin.post("/peers", json={
                    "name": name, "endpoint": server.url, "scheme": "api_key",
                    "secret": f"{name}-link-secret-5e1a",
                })
                assert created.status_code == 201, created.text

            assert put(admin, "a2a.client_timeout_seconds", 0.3).status_code == 200
            started = time.monotonic()
            response = peer.post("/api/v1/a2a/", json=envelope(
                "skills/negotiate", {"skill": "echo", "peerName": "slow-api"}))
            assert time.monotonic() - started < FAST
            assert expect_result(response)["accepted"] is False
            event = node.wait_for_event("a2a.card.unreachable", peer_name="slow-api")
            assert event["detail"] == "no complete answer within 0.3s"

            result = local_cli(node, "settings", "set", "client_timeout_seconds", "0.4")
            assert result.returncode == 0, result.stderr
            started = time.monotonic()
            response = peer.post("/api/v1/a2a/", json=envelope(
                "skills/negotiate", {"skill": "echo", "peerName": "slow-cli"}))
            assert time.monotonic() - started < FAST
            assert expect_result(response)["accepted"] is False
            event = node.wait_for_event("a2a.card.unreachable", peer_name="slow-cli")
            assert event["detail"] == "no complete answer within 0.4s"
            assert server.card_reads >= 2 and server.received == []  # card reads only
        finally:
            release.set()
            for name in ("slow-api", "slow-cli"):
                admin.delete(f"/peers/{name}")
            admin.delete("/settings/a2a.client_timeout_seconds")


def test_card_cache_max_entries_resizes_the_cache_at_once(
    node: LiveNode, admin: httpx.Client, peer: httpx.Client
) -> None:
    for index in range(3):
        response = admin.post("/peers", json={
            "name": f"cache-{index}", "endpoint": CLOSED, "scheme": "bearer",
            "secret": f"cache-link-secret-{index}",
        })
        assert response.status_code == 201, response.text
    try:
        expect_result(peer.post("/api/v1/a2a/", json=envelope("skills/query",
                                                                {"skill": "anything"})))
        status = admin.get("/status").json()
        assert status["cardCacheEntries"] >= 4 and status["cardCacheMaxEntries"] == 512

        assert put(admin, "a2a.card_cache_max_entries", 2).status_code == 200
        status = admin.get("/status").json()
        assert (status["a2aEnabled"], status["cardCacheEntries"],
                status["cardCacheMaxEntries"]) == (True, 2, 2)

        result = local_cli(node, "settings", "set", "card_cache_max_entries", "1")
        assert result.returncode == 0, result.stderr
        # The node sees the other process's write on its next request, and resizes then.
        status = admin.get("/status").json()
        assert (status["cardCacheEntries"], status["cardCacheMaxEntries"]) == (1, 1)

        reset = admin.delete("/settings/a2a.card_cache_max_entries").json()
        assert (reset["value"], reset["source"]) == (512, "default")
        assert admin.get("/status").json()["cardCacheMaxEntries"] == 512
    finally:
        for index in range(3):
            admin.delete(f"/peers/cache-{index}")


def test_push_verification_clock_skew_is_validated_and_stored(
    node: LiveNode, admin: httpx.Client
) -> None:
    name = "a2a.push_verification_clock_skew_seconds"
    written = put(admin, name, 600).json()
    assert (written["value"], written["source"], written["type"]) == (600, "runtime", "integer")
    for bad in (-1, 86401, 1.5, "600"):
        response = put(admin, name, bad)
        assert response.status_code == 400, (bad, response.text)
        problem = response.json()
        assert (problem["key"], problem["allowed"]) == (name, "an integer from 0 to 86400")
    assert admin.get(f"/settings/{name}").json()["value"] == 600

    result = local_cli(node, "settings", "set", name, "120")
    assert result.returncode == 0, result.stderr
    assert admin.get(f"/settings/{name}").json()["value"] == 120  # another process's write
    shown = json.loads(local_cli(node, "settings", "get", name, "--json").stdout)
    assert (shown["value"], shown["source"]) == (120, "runtime")

    result = local_cli(node, "settings", "set", name, "-5")
    assert result.returncode == 2
    assert result.stderr == f"error: {name} must be an integer from 0 to 86400; got -5\n"
    assert admin.delete(f"/settings/{name}").json()["value"] == 300


# -- credentials kept apart ------------------------------------------------------------------------


def test_a_peer_credential_never_opens_the_admin_api(node: LiveNode) -> None:
    with httpx.Client(base_url=node.url, timeout=30.0) as anon:
        for headers in (
            {"X-A2A-Peer-Name": CALLER, "X-API-Key": CALLER_KEY},
            {"X-A2A-Peer-Name": CALLER, "Authorization": f"Bearer {CALLER_KEY}"},
            {"X-API-Key": ADMIN_TOKEN},
        ):
            for method, path in (("GET", "/settings"), ("DELETE", "/peers/caller")):
                response = anon.request(method, ADMIN + path, headers=headers)
                assert response.status_code == 401, (headers.keys(), response.text)
    event = node.wait_for_event("admin.auth_failed", reason="token_mismatch")
    assert event["status"] == 401


def test_the_admin_token_never_passes_a_peer_gate(
    node: LiveNode, admin: httpx.Client
) -> None:
    refused = admin.post("/peers", json={"name": TWIN, "endpoint": CLOSED,
                                         "scheme": "api_key", "secret": ADMIN_TOKEN})
    assert refused.status_code == 400 and refused.json()["key"] == "secret"
    result = local_cli(node, "peers", "add", TWIN, "--endpoint", CLOSED, stdin=ADMIN_TOKEN)
    assert result.returncode == 2 and "admin token" in result.stderr

    add_peer(node.data_dir, TWIN, ADMIN_TOKEN, endpoint=CLOSED)  # past both, into the store
    try:
        with httpx.Client(base_url=node.url, timeout=30.0) as anon:
            for credential in ({"X-API-Key": ADMIN_TOKEN},
                               {"Authorization": f"Bearer {ADMIN_TOKEN}"}):
                response = anon.post("/api/v1/a2a/",
                                     json=envelope("tasks/get", {"id": "none"}),
                                     headers={"X-A2A-Peer-Name": TWIN, **credential})
                expect_error(response, status=401, code=UNAUTHENTICATED)
        node.wait_for_event("a2a.inbound.auth_failed", peer_name=TWIN,
                            reason="admin_token_presented")
    finally:
        assert admin.delete(f"/peers/{TWIN}").status_code == 204


# -- concurrency -----------------------------------------------------------------------------------


def test_concurrent_api_writes_end_in_one_consistent_value(
    node: LiveNode, admin: httpx.Client
) -> None:
    name = "a2a.max_message_parts"
    before = len(audit_lines(node, "admin.setting.changed"))
    values = list(range(50, 66))
    barrier = threading.Barrier(len(values))

    def write(value: int) -> int:
        with httpx.Client(base_url=node.url + ADMIN, timeout=30.0,
                          headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
            barrier.wait()
            return client.put(f"/settings/{name}", json={"value": value}).status_code

    with ThreadPoolExecutor(len(values)) as pool:
        statuses = list(pool.map(write, values))
    assert statuses == [200] * len(values)
    final = admin.get(f"/settings/{name}").json()["value"]
    assert final in values
    trail = audit_lines(node, "admin.setting.changed")[before:]
    assert sorted(e["new"] for e in trail) == values  # every write audited exactly once
    assert trail[-1]["new"] == final  # and the last one audited is the one in force
    # Each audited write saw the one before it: one consistent history, no lost update.
    assert [e["old"] for e in trail[1:]] == [e["new"] for e in trail[:-1]]
    shown = json.loads(local_cli(node, "settings", "get", name, "--json").stdout)
    assert shown["value"] == final
    admin.delete(f"/settings/{name}")


def test_concurrent_api_and_cli_writes_agree_everywhere(
    node: LiveNode, admin: httpx.Client
) -> None:
    name = "a2a.card_cache_max_entries"
    api_values, cli_values = list(range(200, 206)), list(range(300, 303))
    barrier = threading.Barrier(len(api_values) + len(cli_values))

    def api_write(value: int) -> int:
        with httpx.Client(base_url=node.url + ADMIN, timeout=30.0,
                          headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
            barrier.wait()
            return client.put(f"/settings/{name}", json={"value": value}).status_code

    def cli_write(value: int) -> int:
        barrier.wait()
        return local_cli(node, "settings", "set", name, str(value)).returncode

    with ThreadPoolExecutor(len(api_values) + len(cli_values)) as pool:
        api = [pool.submit(api_write, v) for v in api_values]
        clis = [pool.submit(cli_write, v) for v in cli_values]
        assert [f.result() for f in api] == [200] * len(api_values)
        assert [f.result() for f in clis] == [0] * len(cli_values)
    via_api = admin.get(f"/settings/{name}").json()["value"]
    via_cli = json.loads(local_cli(node, "settings", "get", name, "--json").stdout)["value"]
    status = admin.get("/status").json()["cardCacheMaxEntries"]
    assert via_api == via_cli == status and via_api in api_values + cli_values
    admin.delete(f"/settings/{name}")


def test_concurrent_creates_of_one_peer_make_exactly_one(
    node: LiveNode, admin: httpx.Client
) -> None:
    barrier = threading.Barrier(8)

    def create(index: int) -> httpx.Response:
        with httpx.Client(base_url=node.url + ADMIN, timeout=30.0,
                          headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
            barrier.wait()
            return client.post("/peers", json={
                "name": "racer", "endpoint": f"http://127.0.0.1:{9000 + index}",
                "scheme": "api_key", "secret": f"racer-link-secret-{index}",
            })

    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(create, range(8)))
    try:
        assert sorted(r.status_code for r in responses) == [201] + [409] * 7
        winner = next(r.json() for r in responses if r.status_code == 201)
        assert admin.get("/peers/racer").json() == winner
        assert len([e for e in audit_lines(node, "admin.peer.created")
                    if e["peer"] == "racer"]) == 1
    finally:
        admin.delete("/peers/racer")


# -- the CLI against a remote node -----------------------------------------------------------------


def test_remote_cli_manages_settings(
    node: LiveNode, peer: httpx.Client, tmp_path: Path
) -> None:
    result = remote_cli(node, tmp_path, "settings", "set", "max_message_parts", "6")
    assert (result.returncode, result.stdout) == (0, "a2a.max_message_parts = 6 (runtime)\n")
    expect_result(parts_call(peer, 6))
    expect_parts_limit(parts_call(peer, 7), 6)
    event = node.wait_for_event("admin.setting.changed", key="a2a.max_message_parts", new=6)
    assert event["via"] == "admin_api"

    listing = json.loads(remote_cli(node, tmp_path, "settings", "list", "--json").stdout)
    assert {v["name"]: v["value"] for v in listing}["a2a.max_message_parts"] == 6
    result = remote_cli(node, tmp_path, "settings", "set", "max_message_parts", "0")
    assert result.returncode == 2
    assert "a2a.max_message_parts must be an integer from 1 to 1000" in result.stderr
    result = remote_cli(node, tmp_path, "settings", "reset", "max_message_parts")
    assert result.stdout == "a2a.max_message_parts = 3 (config)\n"


def test_remote_cli_manages_peers_and_never_prints_secrets(
    node: LiveNode, tmp_path: Path
) -> None:
    first, second = "remote-secret-LEAKCHECK-1", "remote-secret-LEAKCHECK-2"
    outputs = []

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        result = remote_cli(node, tmp_path, "peers", *args, stdin=stdin)
        outputs.append(result.stdout + result.stderr)
        return result

    added = run("add", "remote-1", "--endpoint", "http://127.0.0.1:9/", stdin=first + "\n")
    assert added.stdout == "added peer remote-1 (endpoint http://127.0.0.1:9, scheme api_key)\n"
    updated = run("add", "Remote-1", "--endpoint", "http://127.0.0.1:10", "--scheme", "bearer",
                  stdin=second)
    assert updated.stdout.startswith("updated peer remote-1 ")
    shown = run("show", "remote-1").stdout
    assert "secret:" in shown and "(stored, encrypted)" in shown and "bearer" in shown
    listed = json.loads(run("list", "--json").stdout)
    assert {"name": "remote-1", "endpoint": "http://127.0.0.1:10", "scheme": "bearer"}.items() \
        <= next(p for p in listed if p["name"] == "remote-1").items()
    assert run("remove", "remote-1").stdout == "removed peer remote-1\n"
    gone = run("remove", "remote-1")
    assert (gone.returncode, gone.stderr) == (1, "error: no peer named remote-1\n")
    assert run("show", "nobody").returncode == 1
    for text in outputs:
        assert first not in text and second not in text
    trail = [(e["event"], e["via"]) for e in audit_lines(node) if e.get("peer") == "remote-1"]
    assert trail == [("admin.peer.created", "admin_api"), ("admin.peer.replaced", "admin_api"),
                     ("admin.peer.deleted", "admin_api")]


def test_remote_cli_with_a_wrong_token_is_refused(node: LiveNode, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.token"
    wrong.write_text("wrong-token-LEAKCHECK-0000000000\n")
    result = remote_cli(node, tmp_path, "peers", "list", "--token-file", str(wrong))
    assert result.returncode == 3 and "refused the admin token" in result.stderr
    assert "wrong-token-LEAKCHECK" not in result.stdout + result.stderr
    result = remote_cli(node, tmp_path, "settings", "list", "--token-env", "NO_SUCH_VAR_X")
    assert result.returncode == 2 and "NO_SUCH_VAR_X is not set" in result.stderr


# -- a node with no token in its environment ------------------------------------------------------


def test_a_generated_token_is_announced_by_path_and_reused(tmp_path: Path) -> None:
    data_dir = tmp_path / "fresh"
    live = LiveNode(data_dir)  # no config.yaml: the A2A gateway is off
    with live:
        token_path = data_dir / TOKEN_FILENAME
        assert stat.S_IMODE(token_path.stat().st_mode) == 0o600
        token = token_path.read_text().strip()
        live.wait_for_line(f"admin API token: in {token_path} (mode 0600, generated now)")
        event = live.wait_for_event("admin.token.ready")
        assert (event["source"], event["path"], event["created"]) == (
            "file", str(token_path), True)

        with httpx.Client(base_url=live.url, timeout=30.0) as client:
            assert client.post("/api/v1/a2a/", json={}).status_code == 404  # gateway off ...
            answer = client.get(ADMIN + "/status", headers={"Authorization": f"Bearer {token}"})
            assert answer.json()["a2aEnabled"] is False  # ... the admin API on
        result = cli(tmp_path / "elsewhere", "settings", "set", "max_message_parts", "9",
                     "--url", live.url, "--token-file", str(token_path), check=False)
        assert result.returncode == 0, result.stderr
        assert token not in result.stdout + result.stderr
    assert all(token not in line for line in live.lines)

    with live:  # a restart keeps the token
        live.wait_for_line(f"admin API token: in {token_path} (mode 0600)")
        assert token_path.read_text().strip() == token
        with httpx.Client(base_url=live.url, timeout=30.0) as client:
            answer = client.get(ADMIN + "/settings/a2a.max_message_parts",
                                headers={"Authorization": f"Bearer {token}"})
            assert answer.json()["value"] == 9  # durable across the restart


def test_a_peers_rate_limit_is_set_through_the_api_and_cleared_through_the_remote_cli(
    node: LiveNode, admin: httpx.Client, peer: httpx.Client, tmp_path: Path
) -> None:
    try:
        assert admin.get(f"/peers/{CALLER}").json()["rateLimit"] is None  # the setting's
        answer = admin.put(f"/peers/{CALLER}/rate-limit", json={"rateLimit": 1})
        assert answer.status_code == 200, answer.text
        assert answer.json()["rateLimit"] == 1.0
        assert admin.get(f"/peers/{CALLER}").json()["rateLimit"] == 1.0
        for bad in ({"rateLimit": -1}, {"rateLimit": "fast"}, {"rateLimit": True},
                    {"rateLimit": 1e7}, {}, {"rateLimit": 1, "burst": 2}):
            refused = admin.put(f"/peers/{CALLER}/rate-limit", json=bad)
            assert refused.status_code == 400, (bad, refused.text)
        assert admin.put("/peers/nobody/rate-limit", json={"rateLimit": 1}).status_code == 404

        # The next requests are held to it: at one a second, the burst runs out at once.
        statuses = []
        for _ in range(100):
            response = peer.post("/api/v1/a2a/", json=envelope("tasks/get", {"id": "none"}))
            statuses.append(response.status_code)
            if response.status_code == 429:
                assert response.json()["error"]["code"] == -32005
                break
        assert statuses[-1] == 429, statuses

        result = remote_cli(node, tmp_path, "peers", "update", CALLER, "--rate-limit", "default")
        assert result.returncode == 0, result.stderr
        assert result.stdout == f"updated peer {CALLER} (rate limit default)\n"
        assert admin.get(f"/peers/{CALLER}").json()["rateLimit"] is None
        response = peer.post("/api/v1/a2a/", json=envelope("tasks/get", {"id": "none"}))
        assert response.status_code == 200, response.text
        trail = [(e["event"], e["via"], e["new"].get("rate_limit")) for e in audit_lines(node)
                 if e.get("peer") == CALLER and e["event"] == "admin.peer.replaced"]
        assert trail[-2:] == [("admin.peer.replaced", "admin_api", 1.0),
                              ("admin.peer.replaced", "admin_api", None)]
    finally:
        admin.put(f"/peers/{CALLER}/rate-limit", json={"rateLimit": None})


def test_a_peers_binding_is_set_and_cleared_through_the_remote_cli(
    node: LiveNode, tmp_path: Path
) -> None:
    added = remote_cli(node, tmp_path, "peers", "add", "bound-1", "--endpoint",
                       "http://127.0.0.1:9", "--binding", "HTTP+JSON",
                       stdin="bound-peer-secret-7c2e91")
    assert added.returncode == 0, added.stderr
    shown = json.loads(remote_cli(node, tmp_path, "peers", "show", "bound-1", "--json").stdout)
    assert shown["binding"] == "HTTP+JSON"
    # a replaced record keeps it; `card` clears it
    again = remote_cli(node, tmp_path, "peers", "add", "bound-1", "--endpoint",
                       "http://127.0.0.1:9", stdin="bound-peer-secret-7c2e91")
    assert again.returncode == 0, again.stderr
    assert json.loads(remote_cli(node, tmp_path, "peers", "show", "bound-1", "--json")
                      .stdout)["binding"] == "HTTP+JSON"
    cleared = remote_cli(node, tmp_path, "peers", "add", "bound-1", "--endpoint",
                         "http://127.0.0.1:9", "--binding", "card",
                         stdin="bound-peer-secret-7c2e91")
    assert cleared.returncode == 0, cleared.stderr
    assert json.loads(remote_cli(node, tmp_path, "peers", "show", "bound-1", "--json")
                      .stdout)["binding"] is None
    refused = remote_cli(node, tmp_path, "peers", "add", "bound-1", "--endpoint",
                         "http://127.0.0.1:9", "--binding", "SOAP", stdin="x")
    assert refused.returncode == 2 and "--binding" in refused.stderr
