"""Cards served by a real node on loopback: spec and official-SDK conformance, the canary
check on every byte, ETag/304 and Cache-Control, the 400/404 paths, Host-header poisoning,
and the per-agent JSON-RPC endpoint."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from a2a.types import AgentCard as SdkAgentCard

from synthorg.cards.validation import spec_issues
from tests.support.catalog import add_peer
from tests.support.codes import UNAUTHENTICATED, UNKNOWN_AGENT
from tests.support.node import NodeProcess
from tests.unit.test_cards_projection import CANARIES, COMPANY_YAML

CLIENT, SECRET = "client", "cards-live-secret-9d8c"
AGENTS = ("translator", "writer", "bare")
CARD_PATHS = ["/.well-known/agent-card.json"] + [
    f"/.well-known/agents/{agent}/agent-card.json" for agent in AGENTS
]


def company_yaml(**a2a: Any) -> str:
    data = yaml.safe_load(COMPANY_YAML)
    data["a2a"]["allowed_peers"].append(CLIENT)
    data["a2a"].update(a2a)
    return yaml.safe_dump(data)


def start(data_dir: Path, config: str) -> NodeProcess:
    add_peer(data_dir, CLIENT, SECRET)
    return NodeProcess(data_dir, config).start()


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    process = start(tmp_path_factory.mktemp("cards-node"), company_yaml())
    yield process
    process.stop()


@pytest.fixture
def http(node: NodeProcess) -> Iterator[httpx.Client]:
    with node.client() as client:
        yield client


def assert_no_canary(response: httpx.Response) -> None:
    raw = response.content + str(response.headers.raw).encode()
    for canary in CANARIES.values():
        assert str(canary).encode() not in raw, canary


# -- conformance and safety ---------------------------------------------------------------------


@pytest.mark.parametrize("path", CARD_PATHS)
def test_every_served_card_matches_the_spec_and_the_official_sdk(
    http: httpx.Client, node: NodeProcess, path: str
) -> None:
    response = http.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    card = response.json()
    assert spec_issues(card, "AgentCard") == []
    parsed = SdkAgentCard.model_validate(card)
    assert parsed.url.startswith(node.url + "/api/v1/a2a/")


def test_no_private_value_in_any_byte_of_any_answer(http: httpx.Client) -> None:
    responses = [http.get(path) for path in CARD_PATHS]
    responses += [http.get(p, headers={"If-None-Match": r.headers["etag"]})
                  for p, r in zip(CARD_PATHS, responses, strict=True)]
    responses += [
        http.get("/.well-known/agents/ghost/agent-card.json"),
        http.get("/.well-known/agents/Ghost/agent-card.json"),
    ]
    assert [r.status_code for r in responses] == [200] * 4 + [304] * 4 + [404, 400]
    for response in responses:
        assert_no_canary(response)


def test_company_card_lists_every_agents_skills_once(http: httpx.Client) -> None:
    card = http.get("/.well-known/agent-card.json").json()
    assert [s["id"] for s in card["skills"]] == ["translate", "summarize"]


# -- the 1.0 document -----------------------------------------------------------------------------

V1_ONLY = {"A2A-Version": "1.0"}
MEMBERS_OF_0_3 = {"url", "protocolVersion", "preferredTransport", "security",
                  "supportsAuthenticatedExtendedCard"}


@pytest.mark.parametrize("path", CARD_PATHS)
@pytest.mark.parametrize("version", ["1.0", "1.0.3"])
def test_a_1_0_caller_gets_the_1_0_only_document(
    http: httpx.Client, node: NodeProcess, path: str, version: str
) -> None:
    response = http.get(path, headers={"A2A-Version": version})
    assert response.status_code == 200
    assert response.headers["vary"] == "A2A-Version"
    card = response.json()
    assert spec_issues(card, "V1AgentCard") == []
    assert not MEMBERS_OF_0_3 & card.keys()
    assert "stateTransitionHistory" not in card["capabilities"]
    assert all(len(scheme) == 1 and next(iter(scheme)).endswith("SecurityScheme")
               for scheme in card["securitySchemes"].values())
    interfaces = card["supportedInterfaces"]
    assert [(i["protocolBinding"], i["protocolVersion"]) for i in interfaces] == [
        ("JSONRPC", "1.0"), ("JSONRPC", "0.3"), ("HTTP+JSON", "1.0")]
    assert interfaces[0]["url"].startswith(node.url + "/api/v1/a2a/")
    assert interfaces[2]["url"] == interfaces[0]["url"].rstrip("/") + "/rest"
    assert_no_canary(response)


MEMBERS_OF_1_0 = {"supportedInterfaces", "securityRequirements"}
SHAPES_OF_1_0 = {"apiKeySecurityScheme", "httpAuthSecurityScheme"}


@pytest.mark.parametrize("headers", [{}, {"A2A-Version": "9.9"}, {"A2A-Version": "one"},
                                     {"A2A-Version": "0.3", "a2a-version": "1.0"}])
def test_any_other_caller_gets_the_combined_document(
    http: httpx.Client, headers: dict[str, str]
) -> None:
    response = http.get("/.well-known/agent-card.json", headers=list(headers.items()))
    assert response.status_code == 200
    assert response.headers["vary"] == "A2A-Version"
    card = response.json()
    assert spec_issues(card, "AgentCard") == []
    assert card.keys() >= MEMBERS_OF_0_3 | MEMBERS_OF_1_0
    # Every scheme in both shapes, each the same scheme; the requirements the same pairs.
    v1_card = http.get("/.well-known/agent-card.json", headers=V1_ONLY).json()
    for name, scheme in card["securitySchemes"].items():
        [shape] = SHAPES_OF_1_0 & scheme.keys()
        assert {shape: scheme[shape]} == v1_card["securitySchemes"][name]
        assert scheme["type"] in ("apiKey", "http")
    assert card["securityRequirements"] == v1_card["securityRequirements"]
    assert [set(r["schemes"]) for r in card["securityRequirements"]] == [
        set(r) for r in card["security"]]


@pytest.mark.parametrize("version", ["0.3", "0.3.0"])
def test_a_0_3_caller_gets_the_0_3_only_document(http: httpx.Client, version: str) -> None:
    response = http.get("/.well-known/agent-card.json", headers={"A2A-Version": version})
    assert response.status_code == 200
    card = response.json()
    assert spec_issues(card, "AgentCard") == []
    assert card.keys() >= MEMBERS_OF_0_3 and not card.keys() & MEMBERS_OF_1_0
    for scheme in card["securitySchemes"].values():
        assert not scheme.keys() & SHAPES_OF_1_0
    SdkAgentCard.model_validate(card)
    combined = http.get("/.well-known/agent-card.json")
    assert response.headers["etag"] != combined.headers["etag"]


def test_each_document_has_its_own_etag_and_304(http: httpx.Client) -> None:
    path = "/.well-known/agent-card.json"
    combined, v1 = http.get(path), http.get(path, headers=V1_ONLY)
    assert combined.headers["etag"] != v1.headers["etag"]
    assert v1.headers["etag"] == f'"{hashlib.sha256(v1.content).hexdigest()[:32]}"'
    again = http.get(path, headers={**V1_ONLY, "If-None-Match": v1.headers["etag"]})
    assert again.status_code == 304
    assert again.headers["vary"] == "A2A-Version"
    # The 1.0 document's ETag does not match the combined one: the combined card is sent.
    other = http.get(path, headers={"If-None-Match": v1.headers["etag"]})
    assert other.status_code == 200
    assert other.content == combined.content


# -- HTTP caching -------------------------------------------------------------------------------


def test_cache_headers_and_a_strong_etag_of_the_body(http: httpx.Client) -> None:
    response = http.get("/.well-known/agent-card.json")
    assert response.headers["cache-control"] == "public, max-age=300"
    etag = response.headers["etag"]
    assert not etag.startswith("W/")
    assert etag == f'"{hashlib.sha256(response.content).hexdigest()[:32]}"'
    assert http.get("/.well-known/agent-card.json").headers["etag"] == etag
    agent = http.get("/.well-known/agents/writer/agent-card.json")
    assert agent.headers["etag"] != etag


@pytest.mark.parametrize(
    "if_none_match", ["{etag}", "W/{etag}", '"nope", {etag}', '"a",W/{etag}', "*"]
)
def test_if_none_match_answers_304(http: httpx.Client, if_none_match: str) -> None:
    first = http.get("/.well-known/agents/translator/agent-card.json")
    etag = first.headers["etag"]
    again = http.get("/.well-known/agents/translator/agent-card.json",
                     headers={"If-None-Match": if_none_match.format(etag=etag)})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    assert again.headers["cache-control"] == "public, max-age=300"


def test_a_stale_etag_gets_the_card(http: httpx.Client) -> None:
    response = http.get("/.well-known/agent-card.json", headers={"If-None-Match": '"stale"'})
    assert response.status_code == 200
    assert response.json()["name"] == "Acme Research"


# -- 400 / 404 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "status", "error"),
    [
        ("ghost", 404, "unknown_agent"),
        ("Writer", 400, "invalid_agent_id"),
        ("a" * 64, 400, "invalid_agent_id"),
        ("-dash", 400, "invalid_agent_id"),
        ("w%C3%A9", 400, "invalid_agent_id"),
    ],
)
def test_unknown_and_malformed_agents(
    http: httpx.Client, agent: str, status: int, error: str
) -> None:
    response = http.get(f"/.well-known/agents/{agent}/agent-card.json")
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["error"] == error
    assert spec_issues(body, "CardError") == []


def test_a_node_with_the_gateway_off_serves_no_cards(tmp_path: Path) -> None:
    with start(tmp_path, company_yaml(enabled=False)) as off, off.client() as client:
        for path in CARD_PATHS[:2]:
            response = client.get(path)
            assert response.status_code == 404
            assert response.json()["error"] == "gateway_disabled"


# -- the card url: never from the Host header --------------------------------------------------


# X-Forwarded-Proto and -For come from a loopback client here, the address a proxy in front
# of the node would have: the node trusts neither.
POISON = {"Host": "evil.example", "X-Forwarded-Host": "evil.example",
          "Forwarded": "host=evil.example;proto=https", "X-Forwarded-Proto": "https",
          "X-Forwarded-For": "203.0.113.9"}


def test_host_header_poisoning_does_not_reach_the_card_or_its_cache(tmp_path: Path) -> None:
    with start(tmp_path, company_yaml()) as fresh, fresh.client() as client:
        # The very first request of the process is the poisoned one, so if the card were
        # built from the Host header, this is what would be cached for everyone.
        for path in CARD_PATHS[:2]:
            poisoned = client.get(path, headers=POISON)
            assert poisoned.status_code == 200
            assert b"evil.example" not in poisoned.content
            assert poisoned.json()["url"].startswith(fresh.url + "/api/v1/a2a/")
            clean = client.get(path)
            assert clean.content == poisoned.content
            assert clean.headers["etag"] == poisoned.headers["etag"]


def test_public_url_is_the_card_url_whatever_the_host(tmp_path: Path) -> None:
    config = company_yaml(public_url="https://node.acme.example/")
    with start(tmp_path, config) as public, public.client() as client:
        card = client.get("/.well-known/agent-card.json", headers=POISON).json()
        assert card["url"] == "https://node.acme.example/api/v1/a2a/"
        agent = client.get("/.well-known/agents/writer/agent-card.json").json()
        assert agent["url"] == "https://node.acme.example/api/v1/a2a/agents/writer/"


# -- the per-agent JSON-RPC endpoint ------------------------------------------------------------


def send(client: httpx.Client, path: str, text: str = "hello") -> httpx.Response:
    return client.post(path, json={
        "jsonrpc": "2.0", "id": 7, "method": "message/send",
        "params": {"message": {"kind": "message", "role": "user", "messageId": str(uuid.uuid4()),
                               "parts": [{"kind": "text", "text": text}]}},
    })


@pytest.mark.parametrize("path", ["/api/v1/a2a/agents/bare/", "/api/v1/a2a/agents/bare"])
def test_a_message_sent_to_an_agents_card_url_is_routed_to_it(
    node: NodeProcess, http: httpx.Client, path: str
) -> None:
    url = http.get("/.well-known/agents/bare/agent-card.json").json()["url"]
    assert url == f"{node.url}/api/v1/a2a/agents/bare/"
    with node.client(CLIENT, SECRET) as peer:
        response = send(peer, path)
    assert response.status_code == 200
    task = response.json()["result"]
    assert task["metadata"]["agentId"] == "bare"
    assert task["status"]["state"] == "completed"


@pytest.mark.parametrize("agent", ["ghost", "Ghost"])
def test_an_unknown_agent_endpoint_is_404_with_32012(node: NodeProcess, agent: str) -> None:
    with node.client(CLIENT, SECRET) as peer:
        response = send(peer, f"/api/v1/a2a/agents/{agent}/")
    assert response.status_code == 404
    assert response.json() == {"jsonrpc": "2.0", "id": None,
                               "error": {"code": UNKNOWN_AGENT, "message": "Unknown agent"}}


def test_agent_endpoints_are_gated(node: NodeProcess, http: httpx.Client) -> None:
    response = send(http, "/api/v1/a2a/agents/bare/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == UNAUTHENTICATED
    assert http.get("/api/v1/a2a/agents/bare/").status_code == 405
