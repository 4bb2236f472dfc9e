"""Signed cards on a live node: every document (company, agent, 1.0-only, the extended card in
both dialects) carries a JWS that verifies with a key of /.well-known/jwks.json; the key set
comes from the data dir or SYNTHORG_CARD_KEYS; `keys rotate` and `keys retire` change what
signs and what is published, and the ETag follows the signature."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from synthorg.cards.keys import KEYS_ENV, public_key_from_jwk
from synthorg.cards.signing import CardSignatureError, verify
from tests.support.node import NodeProcess, cli

PEER, KEY = "sig-peer", "sig-peer-link-secret-31c9"
CONFIG = f"""\
company: {{name: Acme, description: Research on demand.}}
a2a:
  enabled: true
  node_name: node-s
  allowed_peers: [{PEER}]
agents:
  - id: echo
    name: Echo
    executor: {{kind: echo}}
    skills:
      - {{id: public-skill, name: Public, tags: [open]}}
      - {{id: peers-skill, name: Peers only, tags: [inner], visibility: peers}}
"""
V1 = {"A2A-Version": "1.0"}


def header(card: dict[str, Any]) -> dict[str, Any]:
    protected = card["signatures"][0]["protected"]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(protected + "=" * 4))
    return decoded


def published(node: NodeProcess) -> list[Any]:
    with node.client() as client:
        jwks = client.get("/.well-known/jwks.json").json()
    return [public_key_from_jwk({k: v for k, v in jwk.items()}) for jwk in jwks["keys"]]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    data_dir: Path = tmp_path_factory.mktemp("signed-cards")
    with NodeProcess(data_dir, CONFIG) as running:
        cli(data_dir, "peers", "add", PEER, "--endpoint", "http://127.0.0.1:9", stdin=KEY)
        yield running


@pytest.mark.parametrize("path", ["/.well-known/agent-card.json",
                                  "/.well-known/agents/echo/agent-card.json"])
@pytest.mark.parametrize("headers", [{}, V1])
def test_every_public_card_is_signed_by_a_published_key(
    node: NodeProcess, path: str, headers: dict[str, str]
) -> None:
    with node.client() as client:
        card = client.get(path, headers=headers).json()
        jwks = client.get("/.well-known/jwks.json")
    assert jwks.status_code == 200 and jwks.headers["etag"]
    [jwk] = jwks.json()["keys"]
    assert jwk["kty"] == "EC" and jwk["alg"] == "ES256" and "d" not in jwk
    protected = header(card)
    assert protected == {"alg": "ES256", "typ": "JOSE", "kid": jwk["kid"],
                         "jku": node.url + "/.well-known/jwks.json"}
    assert verify(card, published(node)).kid == jwk["kid"]
    tampered = {**card, "name": "Someone Else"}
    with pytest.raises(CardSignatureError) as refused:
        verify(tampered, published(node))
    assert refused.value.reason == "bad_signature"


@pytest.mark.parametrize(("method", "headers"), [("agent/getAuthenticatedExtendedCard", {}),
                                                 ("GetExtendedAgentCard", V1)])
def test_the_extended_card_is_signed_in_each_dialect(
    node: NodeProcess, method: str, headers: dict[str, str]
) -> None:
    with node.client(PEER, KEY) as client:
        answer = client.post("/api/v1/a2a/", headers=headers,
                             json={"jsonrpc": "2.0", "id": 1, "method": method})
    card = answer.json()["result"]
    assert {s["id"] for s in card["skills"]} == {"public-skill", "peers-skill"}
    assert len(card["signatures"]) == 1
    verify(card, published(node))


def test_the_key_file_is_private_and_its_key_signs(node: NodeProcess) -> None:
    path = node.data_dir / "card-keys.json"
    assert path.stat().st_mode & 0o777 == 0o600
    listed = cli(node.data_dir, "keys", "list").stdout.split()
    assert listed[1:3] == ["ES256", "signing"]
    with node.client() as client:
        assert header(client.get("/.well-known/agent-card.json").json())["kid"] == listed[0]


def test_rotate_publishes_both_keys_then_retire_drops_the_old_one(tmp_path: Path) -> None:
    with NodeProcess(tmp_path, CONFIG) as first, first.client() as client:
        before = client.get("/.well-known/agent-card.json")
    old_kid = header(before.json())["kid"]
    rotated = cli(tmp_path, "keys", "rotate", "--alg", "EdDSA")
    new_kid = rotated.stdout.split(":")[0]
    with NodeProcess(tmp_path) as second:
        with second.client() as client:
            after = client.get("/.well-known/agent-card.json")
            # The card's ETag follows its signature; the old ETag gets the new card.
            stale = client.get("/.well-known/agent-card.json",
                               headers={"If-None-Match": before.headers["etag"]})
            kids = [jwk["kid"] for jwk in client.get("/.well-known/jwks.json").json()["keys"]]
        assert kids == [old_kid, new_kid]
        assert header(after.json()) | {"kid": new_kid} == header(after.json())
        assert header(after.json())["alg"] == "EdDSA"
        assert after.headers["etag"] != before.headers["etag"]
        assert stale.status_code == 200 and stale.content == after.content
        # A card signed before the rotation still verifies against what is published.
        verify(before.json(), published(second))
    # '--': a kid may start with '-' (base64url), as the help says.
    refused = cli(tmp_path, "keys", "retire", "--", new_kid, check=False)
    assert refused.returncode == 2 and "rotate first" in refused.stderr
    cli(tmp_path, "keys", "retire", "--", old_kid)
    with NodeProcess(tmp_path) as third:
        with third.client() as client:
            kids = [jwk["kid"] for jwk in client.get("/.well-known/jwks.json").json()["keys"]]
        assert kids == [new_kid]
        with pytest.raises(CardSignatureError):
            verify(before.json(), published(third))


def test_replicas_sign_with_the_key_set_from_the_environment(tmp_path: Path) -> None:
    key_set = cli(tmp_path, "keys", "generate").stdout
    env = {KEYS_ENV: key_set}
    config = CONFIG.replace("  node_name: node-s\n",
                            "  node_name: node-s\n  public_url: https://acme.example\n")
    served = []
    for replica in ("a", "b"):
        with NodeProcess(tmp_path / replica, config, env=env) as node:
            with node.client() as client:
                card = client.get("/.well-known/agent-card.json")
            served.append((card.headers["etag"], card.content))
            assert header(card.json())["kid"] == json.loads(key_set)["keys"][0]["kid"]
            assert header(card.json())["jku"] == "https://acme.example/.well-known/jwks.json"
            assert not (tmp_path / replica / "card-keys.json").exists()
            refused = cli(node.data_dir, "keys", "rotate", env=env, check=False)
            assert refused.returncode == 2 and KEYS_ENV in refused.stderr
    # Deterministic signatures: one card and one key make the same bytes, and so the same
    # strong ETag, on every replica.
    assert served[0] == served[1]


def test_a_bad_key_set_in_the_environment_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(CONFIG)
    done = cli(tmp_path, "serve", "--port", "0", env={KEYS_ENV: '{"keys": [{"alg": "HS256"}]}'},
               check=False)
    assert done.returncode == 2
    assert KEYS_ENV in done.stderr and "alg must be one of ES256, EdDSA" in done.stderr
