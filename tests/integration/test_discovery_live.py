"""Peer card discovery over real sockets on loopback: real nodes, a closed port, and a small
HTTP server in a thread that is slow, drips, sends too much, sends garbage, or changes its card.
Then skills/query and skills/negotiate across three live nodes.

Nothing here sleeps: slow answers wait on threading.Events the test releases, and the test
waits only on the code under test (whose timeouts are what is being checked).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from synthorg.cards.discovery import CardDiscovery, PeerCardStatus, probe_peers
from synthorg.cards.fetch import MAX_CARD_BYTES, Fetched, fetch_card_document
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer
from tests.support.node import NodeProcess
from tests.support.peers import Catalog, Peer

CLIENT, SECRET = "client", "discovery-live-secret-5e6f"
HOLD = 30.0  # upper bound on any held answer, should a test fail before releasing it


# -- a scriptable card server -------------------------------------------------------------------


@dataclass
class Seen:
    path: str
    if_none_match: str | None


Behaviour = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class CardServer:
    behaviour: Behaviour
    seen: list[Seen] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                outer.seen.append(Seen(self.path, self.headers.get("If-None-Match")))
                outer.arrived.set()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    outer.behaviour(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def answer(handler: BaseHTTPRequestHandler, status: int, body: bytes = b"",
           headers: dict[str, str] | None = None) -> None:
    handler.send_response(status)
    for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
        handler.send_header(key, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def card(name: str, *skills: tuple[str, list[str]], url: str | None = None) -> dict[str, Any]:
    return {
        "name": name, "description": f"{name} node", "version": "1.0.0",
        "url": url or f"http://{name}.example/api/v1/a2a/", "protocolVersion": "0.3.0",
        "capabilities": {}, "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": s, "name": s, "description": s, "tags": t} for s, t in skills],
    }


@pytest.fixture
def servers() -> Iterator[Callable[[Behaviour], CardServer]]:
    started: list[CardServer] = []

    def make(behaviour: Behaviour) -> CardServer:
        server = CardServer(behaviour)
        started.append(server)
        return server

    yield make
    for server in started:
        server.close()


def closed_port_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there any more: connection refused
    return f"http://127.0.0.1:{port}"


# -- discovery in this process against real sockets ---------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Recorder:
    """The real fetch, with what each call sent and got."""

    calls: list[tuple[str | None, Fetched]] = field(default_factory=list)

    async def __call__(self, url: str, *, timeout: float, etag: str | None = None) -> Fetched:
        fetched = await fetch_card_document(url, timeout=timeout, etag=etag)
        self.calls.append((etag, fetched))
        return fetched


def discovery(*peers: Peer, timeout: float = 5.0) -> tuple[CardDiscovery, Clock, Recorder]:
    clock, recorder = Clock(), Recorder()
    found = CardDiscovery(Catalog(*peers), lambda: timeout, lambda: 16, clock=clock,
                          fetch=recorder)
    return found, clock, recorder


def lookup(found: CardDiscovery, name: str) -> PeerCardStatus:
    status = asyncio.run(found.lookup(name))
    assert status is not None
    return status


NODE_YAML = """\
company: {{name: {name}}}
agents:
{agents}
a2a:
  enabled: true
  allowed_peers: [{client}]
  client_timeout_seconds: {timeout}
"""


def agent_yaml(agent_id: str, skills: list[tuple[str, list[str]]]) -> str:
    listed = ", ".join(f"{{id: {s}, name: {s}, tags: {json.dumps(t)}}}" for s, t in skills)
    return f"  - {{id: {agent_id}, name: {agent_id}, skills: [{listed}]}}"


def start_node(data_dir: Path, name: str, agents: list[str], timeout: float = 5.0
               ) -> LiveNode:
    add_peer(data_dir, CLIENT, SECRET)
    config = NODE_YAML.format(name=name, agents="\n".join(agents), client=CLIENT,
                              timeout=timeout)
    node = LiveNode(data_dir, config)
    node.start()
    return node


@pytest.fixture(scope="module")
def alpha(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    node = start_node(tmp_path_factory.mktemp("alpha"), "Alpha", [
        agent_yaml("linguist", [("translate", ["French", "german"])]),
        agent_yaml("clerk", [("file", ["paperwork"])]),
    ])
    yield node
    node.stop()


def test_a_real_nodes_card_is_fetched_then_revalidated_with_304(alpha: NodeProcess) -> None:
    found, clock, recorder = discovery(Peer("alpha", alpha.url))
    first = lookup(found, "alpha")
    assert first.reachable, first.describe()
    assert first.card is not None
    assert first.card.url == alpha.rpc_url
    assert sorted(s.id for s in first.card.skills) == ["file", "translate"]
    assert first.describe() == "ok, 2 skills, unverified"
    clock.now += 299
    lookup(found, "alpha")
    assert len(recorder.calls) == 1  # fresh for max-age=300
    clock.now += 2
    again = lookup(found, "alpha")
    assert again == first
    etag_sent, fetched = recorder.calls[1]
    assert etag_sent is not None and etag_sent.startswith('"')
    assert fetched.not_modified


def test_a_peer_that_is_down(servers: Any) -> None:
    found, _, _ = discovery(Peer("down", closed_port_url()))
    status = lookup(found, "down")
    assert (status.reachable, status.reason) == (False, "connect_error")


def test_a_slow_peer_times_out_and_never_stalls_the_caller(servers: Any) -> None:
    def hold(handler: BaseHTTPRequestHandler) -> None:
        slow.release.wait(HOLD)
        answer(handler, 200, json.dumps(card("slow")).encode())

    slow = servers(hold)
    found, _, _ = discovery(Peer("slow", slow.url), timeout=0.3)
    started = time.monotonic()
    status = lookup(found, "slow")
    elapsed = time.monotonic() - started
    assert status.reason == "timeout"
    assert elapsed < 3.0
    assert slow.arrived.is_set()  # it was asked; it just did not answer in time


def test_a_peer_dripping_bytes_is_cut_off_at_the_total_deadline(servers: Any) -> None:
    def drip(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(10_000))
        handler.end_headers()
        # One byte well within any per-read timeout, until released: only a total
        # deadline can end this.
        while not dripping.release.wait(0.02):
            handler.wfile.write(b" ")
            handler.wfile.flush()

    dripping = servers(drip)
    found, _, _ = discovery(Peer("drip", dripping.url), timeout=0.5)
    started = time.monotonic()
    status = lookup(found, "drip")
    assert status.reason == "timeout"
    assert time.monotonic() - started < 3.0


@pytest.mark.parametrize("declared", [True, False])
def test_an_oversized_card_is_refused(servers: Any, declared: bool) -> None:
    big = json.dumps({**card("big"), "padding": "x" * (MAX_CARD_BYTES + 10)}).encode()

    def oversized(handler: BaseHTTPRequestHandler) -> None:
        if declared:
            answer(handler, 200, big)
            return
        # No Content-Length: the body ends when the connection closes, so only the
        # streamed count can stop it.
        handler.protocol_version = "HTTP/1.0"
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Connection", "close")
        handler.end_headers()
        for start in range(0, len(big), 16384):
            handler.wfile.write(big[start:start + 16384])
        handler.close_connection = True

    server = servers(oversized)
    found, _, _ = discovery(Peer("big", server.url))
    status = lookup(found, "big")
    assert status.reason == "too_large"


@pytest.mark.parametrize(
    ("status_code", "body", "headers", "reason"),
    [
        (200, json.dumps({"name": "no url", "skills": []}).encode(), {}, "invalid_card"),
        (200, json.dumps({**card("x"), "url": "ftp://x/"}).encode(), {}, "invalid_card"),
        (200, b"<html>not json</html>", {}, "invalid_card"),
        (200, b'{"name": NaN}', {}, "invalid_card"),
        (200, b"[" * 5000 + b"]" * 5000, {}, "invalid_card"),
        (200, json.dumps(card("x")).encode(), {"Content-Encoding": "gzip"}, "invalid_card"),
        (500, b"{}", {}, "http_status"),
        (302, b"", {"Location": "http://127.0.0.1:9/"}, "http_status"),
    ],
)
def test_invalid_answers(servers: Any, status_code: int, body: bytes,
                         headers: dict[str, str], reason: str) -> None:
    server = servers(lambda handler: answer(handler, status_code, body, headers))
    found, _, _ = discovery(Peer("bad", server.url))
    status = lookup(found, "bad")
    assert status.reason == reason
    if reason == "http_status":
        assert status.http_status == status_code
        assert status.detail == f"HTTP {status_code}"


def test_a_foreign_card_with_unknown_members_is_accepted(servers: Any) -> None:
    foreign = {**card("ext", ("translate", ["fr"])), "additionalInterfaces": [],
               "x-vendor": {"deep": [1, 2]}, "supportsAuthenticatedExtendedCard": True}
    foreign["skills"][0]["security"] = [{"oauth": ["read"]}]
    server = servers(lambda handler: answer(handler, 200, json.dumps(foreign).encode()))
    found, _, _ = discovery(Peer("ext", server.url))
    status = lookup(found, "ext")
    assert status.reachable
    assert "x-vendor" not in str(status)


def test_a_changing_card_is_revalidated_then_refreshed(servers: Any) -> None:
    versions = {"current": ('"v1"', card("moving", ("one", [])))}

    def serve(handler: BaseHTTPRequestHandler) -> None:
        etag, document = versions["current"]
        if handler.headers.get("If-None-Match") == etag:
            answer(handler, 304, headers={"ETag": etag, "Cache-Control": "max-age=60"})
        else:
            answer(handler, 200, json.dumps(document).encode(),
                   {"ETag": etag, "Cache-Control": "public, max-age=60"})

    server = servers(serve)
    found, clock, _ = discovery(Peer("moving", server.url))
    first = lookup(found, "moving")
    assert first.card is not None and [s.id for s in first.card.skills] == ["one"]
    versions["current"] = ('"v2"', card("moving", ("one", []), ("two", [])))
    assert lookup(found, "moving") == first  # still fresh: the peer is not asked
    assert len(server.seen) == 1
    clock.now += 61
    changed = lookup(found, "moving")
    assert changed.card is not None and [s.id for s in changed.card.skills] == ["one", "two"]
    assert server.seen[1].if_none_match == '"v1"'
    clock.now += 61
    assert lookup(found, "moving") == changed  # 304: kept
    assert server.seen[2].if_none_match == '"v2"'
    assert len(server.seen) == 3


def test_probe_peers_for_the_cli(alpha: NodeProcess) -> None:
    statuses = probe_peers([Peer("alpha", alpha.url), Peer("gone", closed_port_url())],
                           timeout=5.0)
    assert [s.describe() for s in statuses] == [
        "ok, 2 skills, unverified", "unreachable: connect_error (could not connect)",
    ]
    assert statuses[0].to_json() == {"peer": "alpha", "status": "ok", "verified": False,
                                     "reason": None,
                                     "detail": None, "skills": 2, "url": alpha.rpc_url}


# -- skills/query and skills/negotiate across three live nodes ----------------------------------


@pytest.fixture(scope="module")
def beta(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    node = start_node(tmp_path_factory.mktemp("beta"), "Beta", [
        agent_yaml("scribe", [("summarize", ["Writing"]), ("translate-legal", ["legal"])]),
    ])
    yield node
    node.stop()


@dataclass
class Hub:
    node: LiveNode
    slow: CardServer


HUB_TIMEOUT = 1.0


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory, alpha: NodeProcess, beta: NodeProcess
        ) -> Iterator[Hub]:
    def hold(handler: BaseHTTPRequestHandler) -> None:
        slow.release.wait(HOLD)
        answer(handler, 200, json.dumps(card("slow")).encode())

    slow = CardServer(hold)
    data_dir = tmp_path_factory.mktemp("gamma")
    for name, endpoint in [("alpha", alpha.url), ("beta", beta.url),
                           ("dead", closed_port_url()), ("slow", slow.url)]:
        add_peer(data_dir, name, f"{name}-link-secret", endpoint)
    node = start_node(data_dir, "Gamma", [agent_yaml("polyglot", [("Translate", ["spanish"])])],
                      timeout=HUB_TIMEOUT)
    yield Hub(node, slow)
    node.stop()
    slow.close()


def rpc(node: NodeProcess, method: str, params: dict[str, Any],
        path: str = "/api/v1/a2a/") -> dict[str, Any]:
    with node.client(CLIENT, SECRET) as client:
        response = client.post(path, json={"jsonrpc": "2.0", "id": "q", "method": method,
                                           "params": params})
    assert response.status_code == 200
    envelope: dict[str, Any] = response.json()
    return envelope


def test_query_finds_local_agents_and_peers_and_a_slow_peer_costs_one_timeout(hub: Hub) -> None:
    started = time.monotonic()
    result = rpc(hub.node, "skills/query", {"skill": "translate"})["result"]
    elapsed = time.monotonic() - started
    assert result == {"skill": "translate", "agents": ["polyglot"], "peers": ["alpha"]}
    assert hub.slow.arrived.is_set()
    assert elapsed < HUB_TIMEOUT + 5.0  # the slow peer holds for HOLD seconds


@pytest.mark.parametrize(
    ("skill", "agents", "peers"),
    [("FRENCH", [], ["alpha"]), ("writing", [], ["beta"]), ("Spanish", ["polyglot"], []),
     ("paperwork", [], ["alpha"]), ("cooking", [], [])],
)
def test_query_by_tag_is_case_insensitive(hub: Hub, skill: str, agents: list[str],
                                          peers: list[str]) -> None:
    result = rpc(hub.node, "skills/query", {"skill": skill})["result"]
    assert (result["agents"], result["peers"]) == (agents, peers)


def test_negotiate_with_a_live_peer_then_delegate_there(hub: Hub, alpha: NodeProcess) -> None:
    result = rpc(hub.node, "skills/negotiate", {"skill": "Translate", "peerName": "alpha"})
    assert result["result"] == {"skill": "Translate", "peerName": "alpha", "accepted": True,
                                "url": alpha.rpc_url, "matchedSkills": ["translate"]}
    declined = rpc(hub.node, "skills/negotiate", {"skill": "translate", "peerName": "beta"})
    assert declined["result"]["accepted"] is False
    assert declined["result"]["matchedSkills"] == []
    # The negotiated url really takes a task.
    with httpx.Client(headers={"X-A2A-Peer-Name": CLIENT, "X-API-Key": SECRET}) as client:
        sent = client.post(result["result"]["url"], json={
            "jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": {"kind": "message", "role": "user",
                                   "messageId": str(uuid.uuid4()),
                                   "parts": [{"kind": "text", "text": "bonjour"}]}},
        })
    assert sent.json()["result"]["status"]["state"] == "completed"


@pytest.mark.parametrize("peer", ["ghost", "dead", "slow", "beta"])
def test_negotiate_tells_no_one_whom_the_node_federates_with(hub: Hub, peer: str) -> None:
    # not in the catalog, card unreachable, card too slow, skill not offered: the same answer
    result = rpc(hub.node, "skills/negotiate", {"skill": "x", "peerName": peer})["result"]
    assert result == {"skill": "x", "peerName": peer, "accepted": False, "url": "",
                      "matchedSkills": []}


def test_skills_methods_answer_on_agent_endpoints_too(hub: Hub) -> None:
    result = rpc(hub.node, "skills/query", {"skill": "summarize"},
                 path="/api/v1/a2a/agents/polyglot/")["result"]
    assert result["peers"] == ["beta"]


def test_the_hub_logged_why_peers_were_unreachable(hub: Hub) -> None:
    rpc(hub.node, "skills/query", {"skill": "anything"})
    event = hub.node.wait_for_event("a2a.card.unreachable", peer_name="dead")
    assert event["reason"] == "connect_error"
    for line in hub.node.lines:
        assert "link-secret" not in line and SECRET not in line
