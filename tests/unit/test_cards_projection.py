"""The allowlist projection: company YAML -> cards that match the spec and the official SDK,
and carry nothing private (canary values planted in every private field)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from a2a.types import AgentCard as SdkAgentCard

from synthorg.cards.projection import (
    SKILLS_EXTENSION_METHODS,
    SKILLS_EXTENSION_URI,
    agent_card,
    company_card,
)
from synthorg.cards.publisher import CardPublisher, render
from synthorg.cards.validation import spec_issues
from synthorg.config.company import NodeConfig, parse_config
from synthorg.contract.spec import all_definitions
from synthorg.generated.constants import AGENT_ID_PATTERN
from synthorg.names import is_agent_id

BASE = "http://127.0.0.1:8000"

# Distinctive values, each planted in one private field; none may appear in any card.
CANARIES = {
    "budget": "canary-budget-7f3a91",
    "budget_number": 918273645,
    "authority": "canary-authority-b2c4d8",
    "model": "canary-model-e5f6a7",
    "model_key": "canary_model_key_c3d2",
    "executor_peer": "canary-exec-peer-11aa",
    "executor_agent": "canary-exec-agent-22bb",
    "allowed_peer": "canary-allowed-33cc",
    "node_name": "canary-node-44dd",
}

COMPANY_YAML = f"""
company:
  name: Acme Research
  description: Research on demand.
  provider_url: https://acme.example
  provider_organization: Acme Ltd
agents:
  - id: translator
    name: Translator
    role: Translates documents
    department: Language
    skills:
      - id: translate
        name: Translate
        description: Translate text between languages.
        tags: [French, german]
        examples: ["Translate 'hello' to French"]
        input_modes: [text/plain]
        output_modes: [text/plain]
    budget: {{monthly_usd: {CANARIES["budget_number"]}, note: {CANARIES["budget"]}}}
    authority: {{can_approve: [{CANARIES["authority"]}], level: 9}}
    model: {{provider: {CANARIES["model"]}, {CANARIES["model_key"]}: 0.123456789}}
    executor: {{kind: peer, peer: {CANARIES["executor_peer"]}, agent: {CANARIES["executor_agent"]}}}
  - id: writer
    name: Writer
    description: Writes and edits.
    skills:
      - id: translate
        name: Translate (writer)
        tags: [Spanish, german]
      - id: summarize
        name: Summarize
        tags: [writing]
      - id: internal-audit
        name: Internal audit
        tags: [audit]
        visibility: peers
    budget: {{cap: {CANARIES["budget"]}}}
    executor: {{kind: park}}
  - id: bare
    name: Bare
a2a:
  enabled: true
  node_name: {CANARIES["node_name"]}
  allowed_peers: [{CANARIES["allowed_peer"]}]
"""


def config_from(text: str) -> NodeConfig:
    return parse_config(yaml.safe_load(text), "config.yaml")


@pytest.fixture(scope="module")
def config() -> NodeConfig:
    return config_from(COMPANY_YAML)


def all_cards(config: NodeConfig) -> dict[str, dict[str, Any]]:
    cards = {"company": company_card(config, BASE, "1.2.3")}
    cards.update({a.id: agent_card(config, a, BASE, "1.2.3") for a in config.agents})
    return {
        name: card.model_dump(mode="json", by_alias=True, exclude_none=True)
        for name, card in cards.items()
    }


def test_every_card_validates_against_the_spec_and_the_official_sdk(config: NodeConfig) -> None:
    for name, card in all_cards(config).items():
        assert spec_issues(card, "AgentCard") == [], name
        parsed = SdkAgentCard.model_validate(card)
        assert parsed.protocol_version == "0.3.0"
        assert parsed.url == card["url"]


def test_no_private_value_appears_in_any_byte_of_any_card(config: NodeConfig) -> None:
    publisher = CardPublisher(config, "1.2.3")
    bodies = [publisher.company_at(BASE).body]
    bodies += [publisher.agent_at(a.id, BASE).body for a in config.agents]  # type: ignore[union-attr]
    # The extended cards (admitted peers only) too.
    scope = {"scheme": "http", "server": ("127.0.0.1", 8000)}
    bodies += [render(publisher.extended(a, scope)).body for a in (None, "translator", "writer")]
    assert len(bodies) == 7
    for body in bodies:
        for canary in CANARIES.values():
            assert str(canary).encode() not in body
        # Not even the values' numeric or key shapes.
        assert b"0.123456789" not in body
        for key in (b"budget", b"authority", b"model", b"executor", b"monthly_usd"):
            assert key not in body


def test_peers_only_skills_are_on_the_extended_cards_only(config: NodeConfig) -> None:
    for name, card in all_cards(config).items():
        assert "internal-audit" not in {skill["id"] for skill in card["skills"]}, name
        assert card["supportsAuthenticatedExtendedCard"] is True
        assert card["capabilities"]["extendedAgentCard"] is True
    publisher = CardPublisher(config, "1.2.3")
    scope = {"scheme": "http", "server": ("127.0.0.1", 8000)}
    company = publisher.extended(None, scope)
    assert {s.id for s in company.skills} == {"translate", "summarize", "internal-audit"}
    assert {s.id for s in publisher.extended("writer", scope).skills} == {
        "translate", "summarize", "internal-audit"
    }
    assert {s.id for s in publisher.extended("translator", scope).skills} == {"translate"}
    assert company.url == BASE + "/api/v1/a2a/"
    extended = company.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert spec_issues(extended, "AgentCard") == []
    assert SdkAgentCard.model_validate(extended).name == "Acme Research"


def test_the_canaries_really_are_in_the_config(config: NodeConfig) -> None:
    """Guards the canary test: the planted values are loaded, so their absence means something."""
    dumped = json.dumps([a.model_dump(mode="json") for a in config.agents]) + json.dumps(
        config.a2a.model_dump(mode="json")
    )
    for canary in CANARIES.values():
        assert str(canary) in dumped


def test_cards_carry_exactly_the_allowlisted_members(config: NodeConfig) -> None:
    cards = all_cards(config)
    company = cards["company"]
    assert set(company) == {
        "name", "description", "url", "version", "protocolVersion", "preferredTransport",
        "capabilities", "defaultInputModes", "defaultOutputModes", "skills",
        "securitySchemes", "security", "securityRequirements", "provider",
        "supportedInterfaces", "supportsAuthenticatedExtendedCard",
    }
    for card in cards.values():
        for skill in card["skills"]:
            assert set(skill) <= {
                "id", "name", "description", "tags", "examples", "inputModes", "outputModes",
            }


def test_company_card_merges_all_agents_skills_by_id(config: NodeConfig) -> None:
    company = all_cards(config)["company"]
    assert company["name"] == "Acme Research"
    assert company["url"] == f"{BASE}/api/v1/a2a/"
    assert [s["id"] for s in company["skills"]] == ["translate", "summarize"]
    translate = company["skills"][0]
    assert translate["name"] == "Translate"  # the first definition wins
    assert translate["tags"] == ["French", "german", "Spanish"]  # tags are merged
    assert translate["examples"] == ["Translate 'hello' to French"]
    assert translate["inputModes"] == ["text/plain"]
    assert company["provider"] == {"organization": "Acme Ltd", "url": "https://acme.example"}


def test_agent_cards_point_at_the_agents_own_endpoint(config: NodeConfig) -> None:
    cards = all_cards(config)
    assert cards["translator"]["url"] == f"{BASE}/api/v1/a2a/agents/translator/"
    assert cards["translator"]["description"] == "Translates documents, Language department"
    assert cards["writer"]["description"] == "Writes and edits."
    assert cards["bare"]["description"] == "An agent of Acme Research."
    assert cards["bare"]["skills"] == []
    assert [s["id"] for s in cards["writer"]["skills"]] == ["translate", "summarize"]
    assert cards["writer"]["skills"][1]["description"] == "Summarize"  # falls back to the name


def test_cards_list_the_http_json_interface_beside_json_rpc(config: NodeConfig) -> None:
    cards = all_cards(config)
    bindings = [(i["protocolBinding"], i["protocolVersion"], i["url"])
                for i in cards["company"]["supportedInterfaces"]]
    assert bindings == [("JSONRPC", "1.0", f"{BASE}/api/v1/a2a/"),
                        ("JSONRPC", "0.3", f"{BASE}/api/v1/a2a/"),
                        ("HTTP+JSON", "1.0", f"{BASE}/api/v1/a2a/rest")]
    rest = cards["translator"]["supportedInterfaces"][2]
    assert rest == {"url": f"{BASE}/api/v1/a2a/agents/translator/rest",
                    "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}


def test_cards_declare_capabilities_extension_and_the_three_headers(config: NodeConfig) -> None:
    card = all_cards(config)["company"]
    assert card["protocolVersion"] == "0.3.0"
    assert card["preferredTransport"] == "JSONRPC"
    capabilities = card["capabilities"]
    assert capabilities["streaming"] is True  # message/stream, tasks/resubscribe
    assert capabilities["pushNotifications"] is True
    [extension] = capabilities["extensions"]
    assert extension["uri"] == SKILLS_EXTENSION_URI
    assert extension["required"] is False
    assert extension["params"]["methods"] == list(SKILLS_EXTENSION_METHODS)
    schemes = card["securitySchemes"]
    assert {(s["type"], s.get("in"), s.get("name"), s.get("scheme")) for s in schemes.values()} == {
        ("apiKey", "header", "X-A2A-Peer-Name", None),
        ("apiKey", "header", "X-API-Key", None),
        ("http", None, None, "bearer"),
    }
    for requirement in card["security"]:
        assert set(requirement) <= set(schemes)
    # The secret alone names the peer: each credential scheme also stands on its own.
    assert {"ApiKey": []} in card["security"] and {"Bearer": []} in card["security"]


def test_provider_is_left_out_without_a_provider_url() -> None:
    card = company_card(config_from("agents: [{id: a, name: A}]"), BASE, "1.0.0")
    assert card.provider is None
    assert card.name == "SynthOrg node"
    assert spec_issues(card.model_dump(mode="json", by_alias=True, exclude_none=True)) == []


def test_rendering_is_canonical_and_the_etag_is_its_hash(config: NodeConfig) -> None:
    first = render(company_card(config, BASE, "1.2.3"))
    again = render(company_card(config, BASE, "1.2.3"))
    other = render(company_card(config, "https://elsewhere.example", "1.2.3"))
    assert first == again
    assert first.etag != other.etag
    assert first.etag.startswith('"') and first.etag.endswith('"')
    assert json.loads(first.body)["url"] == f"{BASE}/api/v1/a2a/"


def test_spec_validation_really_rejects_bad_cards(config: NodeConfig) -> None:
    card = all_cards(config)["company"]
    assert spec_issues({**card, "budget": {"x": 1}})  # unknown member: strict
    assert spec_issues({**card, "protocolVersion": "0.2.0"})
    broken = {**card, "skills": [{"id": "x", "name": "X"}]}  # description and tags missing
    assert len(spec_issues(broken)) == 2
    without_url = dict(card)
    del without_url["url"]
    assert spec_issues(without_url)


def test_agent_id_pattern_is_the_specs() -> None:
    assert all_definitions()["AgentId"][1]["pattern"] == AGENT_ID_PATTERN
    assert is_agent_id("writer-2_x")
    for bad in ("", "Writer", "-x", "a/b", "a" * 64, "é", "x\n", "x "):
        assert not is_agent_id(bad), bad


@pytest.mark.parametrize(("base", "target"), [
    ("https://node.example", "node.example:50051"),
    ("http://127.0.0.1:8000", "127.0.0.1:50051"),
    ("http://[::1]:8000", "[::1]:50051"),
])
def test_the_grpc_port_adds_a_grpc_interface_to_the_company_card_only(
    base: str, target: str
) -> None:
    on = config_from(COMPANY_YAML + "server: {grpc_port: 50051}\n")
    card = company_card(on, base, "1.2.3").model_dump(by_alias=True, exclude_none=True)
    assert card["supportedInterfaces"][-1] == {
        "url": target, "protocolBinding": "GRPC", "protocolVersion": "1.0"}
    assert spec_issues(card) == []
    agent = agent_card(on, on.agents[0], base, "1.2.3")
    assert all(i.protocolBinding != "GRPC" for i in agent.supportedInterfaces or [])
    off = company_card(config_from(COMPANY_YAML), base, "1.2.3")
    assert all(i.protocolBinding != "GRPC" for i in off.supportedInterfaces or [])
