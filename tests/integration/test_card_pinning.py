"""Verified peer cards: a peer pinned with `peers add --card-key` must sign its card with that
key. A real signing node is the honest peer; a card server in the test replays its card
tampered, unsigned, or signed by another key. Refusals show in `peers list`, in the admin
API's `card`, and as `a2a.card.refused`; the refused card is not used."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from synthorg.admin.token import TOKEN_ENV
from synthorg.cards.keys import CardKeySet, new_key
from synthorg.cards.signing import signed
from tests.integration.live import LiveNode
from tests.integration.test_discovery_live import CardServer, answer
from tests.support.node import NodeProcess, cli

ADMIN_TOKEN = "pinning-admin-token-7c1d93ab55"
CLIENT = "caller"
PEER_CONFIG = """\
company: {name: Honest, description: Signs its cards.}
a2a: {enabled: true, node_name: honest}
agents:
  - id: scribe
    name: Scribe
    executor: {kind: echo}
    skills:
      - {id: summarize, name: Summarize, tags: [writing]}
"""
HUB_CONFIG = f"""\
a2a:
  enabled: true
  node_name: hub
  allowed_peers: [{CLIENT}]
agents:
  - {{id: local, name: Local, executor: {{kind: echo}}}}
"""


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    with NodeProcess(tmp_path_factory.mktemp("honest"), PEER_CONFIG) as node:
        yield node


def card_of(node: NodeProcess) -> dict[str, Any]:
    with node.client() as client:
        document: dict[str, Any] = client.get("/.well-known/agent-card.json").json()
    return document


def jwk_of(node: NodeProcess) -> str:
    return json.dumps(CardKeySet.load(node.data_dir, create=False).signer.public_jwk)


def serving(document: dict[str, Any]) -> CardServer:
    body = json.dumps(document).encode()
    return CardServer(lambda handler: answer(handler, 200, body))


@pytest.fixture(scope="module")
def forgeries(honest: NodeProcess) -> Iterator[dict[str, CardServer]]:
    card = card_of(honest)
    stranger = new_key()
    servers = {
        "tampered": serving({**card, "name": "Mallory"}),
        "unsigned": serving({k: v for k, v in card.items() if k != "signatures"}),
        "other-key": serving(signed(card, stranger, "http://127.0.0.1:9/j")),
    }
    yield servers
    for server in servers.values():
        server.close()


def add(data_dir: Path, name: str, endpoint: str, *extra: str) -> None:
    cli(data_dir, "peers", "add", name, "--endpoint", endpoint, *extra,
        stdin=f"{name}-link-secret")


def listed(data_dir: Path) -> dict[str, dict[str, Any]]:
    out = cli(data_dir, "peers", "list", "--json").stdout
    return {row["name"]: row for row in json.loads(out)}


def test_pinned_peers_verify_and_unpinned_ones_are_unverified(
    honest: NodeProcess, tmp_path: Path
) -> None:
    thumb = json.loads(jwk_of(honest))["kid"]
    add(tmp_path, "by-jwk", honest.url, "--card-key", jwk_of(honest))
    add(tmp_path, "by-jwks", honest.url, "--card-key",
        f"{honest.url}/.well-known/jwks.json#{thumb}")
    add(tmp_path, "unpinned", honest.url)
    rows = listed(tmp_path)
    for name in ("by-jwk", "by-jwks"):
        assert rows[name]["card"]["status"] == "ok" and rows[name]["card"]["verified"] is True
    assert rows["unpinned"]["card"] == {**rows["unpinned"]["card"], "status": "ok",
                                        "verified": False}
    assert rows["by-jwks"]["card_key"].endswith("#" + thumb)
    table = cli(tmp_path, "peers", "list").stdout
    assert "ok, 1 skill, signature verified" in table and "ok, 1 skill, unverified" in table


@pytest.mark.parametrize(("forgery", "reason"), [
    ("tampered", "bad_signature"), ("unsigned", "unsigned"), ("other-key", "bad_signature"),
])
def test_a_pinned_peer_with_a_forged_card_is_refused_in_the_cli(
    honest: NodeProcess, forgeries: dict[str, CardServer], tmp_path: Path, forgery: str,
    reason: str,
) -> None:
    add(tmp_path, "forged", forgeries[forgery].url, "--card-key", jwk_of(honest))
    card = listed(tmp_path)["forged"]["card"]
    assert card["status"] == "refused" and card["skills"] is None
    assert card["detail"].startswith(reason + ":")
    assert f"refused: {reason}:" in cli(tmp_path, "peers", "list").stdout
    # Unpinned, the same card is accepted, as unverified.
    add(tmp_path, "forged", forgeries[forgery].url, "--card-key", "none")
    assert listed(tmp_path)["forged"]["card"]["status"] == "ok"


def test_a_bad_card_key_is_refused_before_anything_is_stored(tmp_path: Path) -> None:
    for bad in ('{"kty": "oct", "k": "c2VjcmV0"}', "https://x.example/jwks.json#short",
                "not a key"):
        done = cli(tmp_path, "peers", "add", "p", "--endpoint", "http://127.0.0.1:9",
                   "--card-key", bad, stdin="p-link-secret-4b1e9c", check=False)
        assert done.returncode == 2 and "card key" in done.stderr
    assert listed(tmp_path) == {}


def test_a_running_node_refuses_the_card_says_why_and_writes_an_event(
    honest: NodeProcess, forgeries: dict[str, CardServer], tmp_path: Path
) -> None:
    add(tmp_path, CLIENT, "http://127.0.0.1:9")
    add(tmp_path, "honest", honest.url, "--card-key", jwk_of(honest))
    add(tmp_path, "forged", forgeries["tampered"].url, "--card-key", jwk_of(honest))
    with LiveNode(tmp_path, HUB_CONFIG, env={TOKEN_ENV: ADMIN_TOKEN}) as hub:
        with hub.client(CLIENT, f"{CLIENT}-link-secret") as client:
            body = {"jsonrpc": "2.0", "id": 1, "method": "skills/query",
                    "params": {"skill": "summarize"}}
            result = client.post("/api/v1/a2a/", json=body).json()["result"]
        # The refused card's skills are not offered; the verified peer's are.
        assert result["peers"] == ["honest"]
        event = hub.wait_for_event("a2a.card.refused", peer_name="forged")
        assert event["detail"].startswith("bad_signature:")
        admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        forged = httpx.get(f"{hub.url}/api/v1/admin/peers/forged", headers=admin).json()
        assert forged["card"]["status"] == "refused"
        assert forged["card"]["detail"].startswith("bad_signature:")
        pinned = json.loads(jwk_of(honest))
        assert json.loads(forged["cardKey"]) == {k: pinned[k] for k in ("crv", "kty", "x", "y")}
        honest_view = httpx.get(f"{hub.url}/api/v1/admin/peers/honest", headers=admin).json()
        assert honest_view["card"] == {"status": "ok", "verified": True}
        # Unpinning through the admin API: the next fetch accepts the card, unverified.
        unpinned = httpx.put(f"{hub.url}/api/v1/admin/peers/forged/card-key", headers=admin,
                             json={"cardKey": None})
        assert unpinned.status_code == 200 and unpinned.json()["cardKey"] is None
        refused = httpx.put(f"{hub.url}/api/v1/admin/peers/forged/card-key", headers=admin,
                            json={"cardKey": "nonsense"})
        assert refused.status_code == 400
