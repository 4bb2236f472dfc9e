"""The card parts of the contract: card.json mirrors the A2A 0.3.0 reference field names, and
openapi.yaml documents the card operations and the per-agent endpoint as served."""

from __future__ import annotations

from typing import Any

import pytest

from synthorg.cards.peer_card import PEER_CARD_MEMBERS, PEER_SKILL_MEMBERS
from synthorg.contract.spec import all_definitions, bundled_openapi
from tests.support.a2a_reference import ReferenceDefinitions

SAME_SHAPE = [
    "AgentCard", "AgentSkill", "AgentCapabilities", "AgentExtension", "AgentProvider",
    "AgentInterface", "AgentCardSignature", "APIKeySecurityScheme", "HTTPAuthSecurityScheme",
    "OAuth2SecurityScheme", "OpenIdConnectSecurityScheme", "MutualTLSSecurityScheme",
]


# The A2A 1.0 members our cards add beside the 0.3 ones (one document for both versions).
V1_MEMBERS = {
    "AgentCard": {"supportedInterfaces", "securityRequirements"},
    "AgentCapabilities": {"extendedAgentCard"},
    "APIKeySecurityScheme": {"apiKeySecurityScheme"},
    "HTTPAuthSecurityScheme": {"httpAuthSecurityScheme"},
}


def reference() -> dict[str, Any]:
    """The official card shapes, as the official SDK defines them."""
    return ReferenceDefinitions()


@pytest.mark.parametrize("name", SAME_SHAPE)
def test_card_objects_match_the_reference_field_names(name: str) -> None:
    theirs = reference()[name]
    ours = all_definitions()[name][1]
    assert set(ours["properties"]) == set(theirs["properties"]) | V1_MEMBERS.get(name, set())
    assert sorted(ours.get("required", [])) == sorted(theirs.get("required", []))
    assert ours["additionalProperties"] is False


def test_security_scheme_union_covers_the_reference_variants() -> None:
    theirs = reference()["SecurityScheme"]["anyOf"]
    ours = all_definitions()["SecurityScheme"][1]["oneOf"]
    assert {r["$ref"].rsplit("/", 1)[1] for r in ours} == {
        r["$ref"].rsplit("/", 1)[1] for r in theirs
    }


def test_peer_card_reads_only_what_discovery_uses() -> None:
    assert set(all_definitions()["PeerCard"][1]["properties"]) == set(PEER_CARD_MEMBERS)
    assert set(all_definitions()["PeerSkill"][1]["properties"]) == set(PEER_SKILL_MEMBERS)


# The HTTP server's own refusals, documented on every operation (408, 431, 503).
SERVER_REFUSALS = {"408", "431", "503"}


def operation(path: str, method: str) -> dict[str, Any]:
    found: dict[str, Any] = bundled_openapi()["paths"][path][method]
    return found


@pytest.mark.parametrize(
    ("path", "operation_id", "statuses"),
    [
        ("/.well-known/agent-card.json", "handlers.cards.company_card",
         {"200", "304", "404", "405", *SERVER_REFUSALS}),
        ("/.well-known/agents/{agent_id}/agent-card.json", "handlers.cards.agent_card",
         {"200", "304", "400", "404", "405", *SERVER_REFUSALS}),
    ],
)
def test_card_operations_are_public_and_document_every_answer(
    path: str, operation_id: str, statuses: set[str]
) -> None:
    op = operation(path, "get")
    assert op["operationId"] == operation_id
    assert op["security"] == []
    assert set(op["responses"]) == statuses
    card = bundled_openapi()["components"]["responses"]["Card"]
    documents = card["content"]["application/json"]["schema"]["oneOf"]
    assert [d["$ref"].rsplit("/", 1)[1] for d in documents] == ["AgentCard", "V1AgentCard"]
    assert {p.get("$ref", "").rsplit("/", 1)[-1] for p in op["parameters"]} >= {"CardVersion"}
    assert {"Cache-Control", "ETag"} <= set(card["headers"])
    assert {"Cache-Control", "ETag"} <= set(
        bundled_openapi()["components"]["responses"]["CardNotModified"]["headers"]
    )


def test_the_agent_endpoint_is_documented_like_the_company_one() -> None:
    company = operation("/api/v1/a2a/", "post")
    agent = operation("/api/v1/a2a/agents/{agent_id}/", "post")
    assert agent["operationId"] == "gateway.agent_rpc"
    assert agent["security"] == company["security"]
    assert agent["requestBody"] == company["requestBody"]
    assert set(agent["responses"]) == set(company["responses"])
