"""The extended card over real HTTP: both dialects' methods, behind the gates, with the
skills marked `visibility: peers`; the public card without them; no private field in either."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.node import NodeProcess, cli

PEER, KEY = "card-peer", "card-peer-link-secret-8a2f"
SECRET_BUDGET = "canary-extended-budget-5d1e"
CONFIG = f"""\
company: {{name: Acme, description: Research on demand.}}
a2a:
  enabled: true
  node_name: node-x
  allowed_peers: [{PEER}]
agents:
  - id: echo
    name: Echo
    executor: {{kind: echo}}
    budget: {{note: {SECRET_BUDGET}}}
    skills:
      - {{id: public-skill, name: Public, tags: [open]}}
      - {{id: peers-skill, name: Peers only, tags: [inner], visibility: peers}}
"""


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    data_dir: Path = tmp_path_factory.mktemp("extended-card")
    with NodeProcess(data_dir, CONFIG) as running:
        cli(data_dir, "peers", "add", PEER, "--endpoint", "http://127.0.0.1:9", stdin=KEY)
        yield running


def rpc(node: NodeProcess, method: str, path: str = "/api/v1/a2a/", **headers: str) -> Any:
    with node.client(PEER, KEY) as client:
        body = {"jsonrpc": "2.0", "id": 1, "method": method}
        return client.post(path, json=body, headers=headers)


def skill_ids(card: dict[str, Any]) -> set[str]:
    return {skill["id"] for skill in card["skills"]}


def test_the_public_card_leaves_out_peers_only_skills(node: NodeProcess) -> None:
    with node.client() as client:
        card = client.get("/.well-known/agent-card.json")
    assert skill_ids(card.json()) == {"public-skill"}
    assert card.json()["supportsAuthenticatedExtendedCard"] is True
    assert SECRET_BUDGET.encode() not in card.content


@pytest.mark.parametrize(
    ("method", "headers"),
    [("agent/getAuthenticatedExtendedCard", {}), ("GetExtendedAgentCard", {"A2A-Version": "1.0"})],
)
def test_admitted_peers_read_the_extended_card_in_both_dialects(
    node: NodeProcess, method: str, headers: dict[str, str]
) -> None:
    answer = rpc(node, method, **headers)
    card = answer.json()["result"]
    assert skill_ids(card) == {"public-skill", "peers-skill"}
    assert [(i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]] == [
        ("JSONRPC", "1.0"), ("JSONRPC", "0.3"), ("HTTP+JSON", "1.0")]
    assert [i["url"] for i in card["supportedInterfaces"]] == [
        node.rpc_url, node.rpc_url, node.rpc_url.rstrip("/") + "/rest"]
    assert SECRET_BUDGET.encode() not in answer.content
    agent = rpc(node, method, "/api/v1/a2a/agents/echo/", **headers).json()["result"]
    assert skill_ids(agent) == {"public-skill", "peers-skill"}
    assert agent["supportedInterfaces"][0]["url"] == node.url + "/api/v1/a2a/agents/echo/"
    assert agent["supportedInterfaces"][2]["url"] == node.url + "/api/v1/a2a/agents/echo/rest"
    if method == "GetExtendedAgentCard":  # 1.0's members only, in the protobuf JSON mapping
        assert not {"url", "protocolVersion", "security", "preferredTransport"} & set(card)
        assert card["securitySchemes"]["ApiKey"] == {"apiKeySecurityScheme": {
            "location": "header", "name": "X-API-Key",
            "description": card["securitySchemes"]["ApiKey"]["apiKeySecurityScheme"]["description"],
        }}
        assert {"schemes": {"PeerName": {"list": []}, "ApiKey": {"list": []}}} in card[
            "securityRequirements"
        ]
    else:
        assert card["url"] == node.rpc_url


def test_the_extended_card_is_behind_the_gates(node: NodeProcess) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard"}
    with node.client() as anonymous:
        refused = anonymous.post("/api/v1/a2a/", json=body)
    assert refused.status_code == 401 and "peers-skill" not in refused.text
    with node.client(PEER, "wrong-key") as wrong:
        assert wrong.post("/api/v1/a2a/", json=body).status_code == 401
