"""The allowlist projection: company YAML -> A2A 0.3.0 AgentCard.

Every card member is named here and copied from one named config field. Nothing iterates over
a config object or dumps it, so a private field (budget, authority, model, executor, or any
field added later) can never reach a card. The result is validated by the generated
`AgentCard` model, so a card this node serves always matches the spec.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from importlib import metadata
from typing import Any
from urllib.parse import urlsplit

from synthorg.cards.v1 import scheme_v1, security_requirements_v1
from synthorg.config.company import NodeConfig
from synthorg.generated.constants import (
    A2A_VERSION_0_3,
    A2A_VERSION_1_0,
    API_KEY_HEADER,
    GATEWAY_AGENT_RPC,
    GATEWAY_REST_AGENT_LIST_TASKS,
    GATEWAY_REST_LIST_TASKS,
    GATEWAY_RPC,
    PEER_NAME_HEADER,
    SKILLS_NEGOTIATE,
    SKILLS_QUERY,
)
from synthorg.generated.models import AgentCard, AgentConfig, CompanyConfig, SkillConfig

PROTOCOL_VERSION = "0.3.0"
# supportedInterfaces: both dialects on the one JSON-RPC endpoint, the newer first.
DIALECT_VERSIONS = (A2A_VERSION_1_0, A2A_VERSION_0_3)
RPC_PATH = GATEWAY_RPC.path
AGENT_RPC_PATH = GATEWAY_AGENT_RPC.path
# The HTTP+JSON binding's base (a client appends `/message:send`, `/tasks`...): 1.0 only.
REST_PATH = posixpath.dirname(GATEWAY_REST_LIST_TASKS.path)
AGENT_REST_PATH = posixpath.dirname(GATEWAY_REST_AGENT_LIST_TASKS.path)
SKILLS_EXTENSION_URI = "https://synthorg.example/a2a/extensions/skills/v1"
SKILLS_EXTENSION_METHODS = (SKILLS_QUERY, SKILLS_NEGOTIATE)
# What message/send accepts and what the built-in executors answer with.
DEFAULT_MODES = ("text/plain", "application/json")
MAX_TAGS = 256  # AgentSkill.tags maxItems in spec/schemas/card.json
PEERS_ONLY = "peers"  # SkillConfig.visibility: only on the extended card

SECURITY_SCHEMES: dict[str, dict[str, str]] = {
    "PeerName": {
        "type": "apiKey", "in": "header", "name": PEER_NAME_HEADER,
        "description": "The calling peer's name; it must be on this node's allowlist.",
    },
    "ApiKey": {
        "type": "apiKey", "in": "header", "name": API_KEY_HEADER,
        "description": "The secret this node's operator registered for the calling peer.",
    },
    "Bearer": {
        "type": "http", "scheme": "bearer",
        "description": "The same secret, sent as Authorization: Bearer.",
    },
}
# A caller is admitted by its secret in either header, with its name or without it.
SECURITY: list[dict[str, list[str]]] = [
    {"PeerName": [], "ApiKey": []},
    {"PeerName": [], "Bearer": []},
    # The credential alone names the peer, so one header is enough (an SDK's auth interceptor
    # sends exactly one).
    {"ApiKey": []},
    {"Bearer": []},
]
# Each scheme in both dialects' shapes: a reader of either ignores the other's members.
BOTH_SHAPES_SCHEMES = {
    name: {**scheme, **(scheme_v1(scheme) or {})} for name, scheme in SECURITY_SCHEMES.items()
}


def card_version() -> str:
    try:
        return metadata.version("synthorg-a2a")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def _shown(skills: Iterable[SkillConfig], extended: bool) -> list[SkillConfig]:
    """The skills a card lists: `visibility: peers` ones only on the extended card."""
    return [skill for skill in skills if extended or skill.visibility != PEERS_ONLY]


def company_card(
    config: NodeConfig, base_url: str, version: str, extended: bool = False
) -> AgentCard:
    """The company card: every agent's skills, de-duplicated by id."""
    company = config.company
    skills = _merged_skills(
        _shown((skill for agent in config.agents for skill in agent.skills or []), extended)
    )
    return _card(
        company, name=company.name, description=company.description,
        url=base_url + RPC_PATH, version=version, skills=skills,
        rest_url=base_url + REST_PATH, grpc=grpc_interface(config, base_url),
    )


def grpc_interface(config: NodeConfig, base_url: str) -> dict[str, str] | None:
    """The gRPC binding (`server.grpc_port`) as an interface: `host:port`, a gRPC target, on
    the host of the card's base URL. The company card's only: the binding has no agent path
    (a message names its agent as on the company endpoint)."""
    port = config.server.grpc_port
    if port is None or not config.a2a.enabled:
        return None
    host = urlsplit(base_url).hostname or "localhost"
    host = f"[{host}]" if ":" in host else host
    return {"url": f"{host}:{port}", "protocolBinding": "GRPC",
            "protocolVersion": A2A_VERSION_1_0}


def agent_card(
    config: NodeConfig, agent: AgentConfig, base_url: str, version: str, extended: bool = False
) -> AgentCard:
    """One agent's card; its url is that agent's own JSON-RPC endpoint."""
    company = config.company
    return _card(
        company, name=agent.name, description=_agent_description(agent, company),
        url=base_url + AGENT_RPC_PATH.format(agent_id=agent.id), version=version,
        skills=[_skill(skill) for skill in _shown(agent.skills or [], extended)],
        rest_url=base_url + AGENT_REST_PATH.format(agent_id=agent.id),
    )


def _card(
    company: CompanyConfig, *, name: str, description: str, url: str, version: str,
    skills: list[dict[str, Any]], rest_url: str, grpc: dict[str, str] | None = None,
) -> AgentCard:
    card: dict[str, Any] = {
        "name": name,
        "description": description,
        "url": url,
        "version": version,
        "protocolVersion": PROTOCOL_VERSION,
        "preferredTransport": "JSONRPC",
        "supportedInterfaces": [
            *({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": version}
              for version in DIALECT_VERSIONS),
            {"url": rest_url, "protocolBinding": "HTTP+JSON", "protocolVersion": A2A_VERSION_1_0},
            *([grpc] if grpc is not None else []),
        ],
        "supportsAuthenticatedExtendedCard": True,
        "capabilities": {
            "streaming": True,  # message/stream and tasks/resubscribe
            "pushNotifications": True,  # tasks/pushNotificationConfig/* and delivery
            "stateTransitionHistory": True,
            "extendedAgentCard": True,
            "extensions": [{
                "uri": SKILLS_EXTENSION_URI,
                "description": "SynthOrg skill discovery: the JSON-RPC methods skills/query "
                               "(who offers a skill) and skills/negotiate (does a peer offer it).",
                "required": False,
                "params": {"methods": list(SKILLS_EXTENSION_METHODS)},
            }],
        },
        "defaultInputModes": list(DEFAULT_MODES),
        "defaultOutputModes": list(DEFAULT_MODES),
        "skills": skills,
        "securitySchemes": BOTH_SHAPES_SCHEMES,
        "security": SECURITY,
        "securityRequirements": security_requirements_v1(SECURITY),
    }
    if company.provider_url:
        card["provider"] = {
            "organization": company.provider_organization or company.name,
            "url": company.provider_url,
        }
    return AgentCard.model_validate(card)


def _skill(skill: SkillConfig) -> dict[str, Any]:
    card: dict[str, Any] = {
        "id": skill.id,
        "name": skill.name,
        "description": skill.description or skill.name,
        "tags": list(skill.tags or []),
    }
    if skill.examples:
        card["examples"] = list(skill.examples)
    if skill.input_modes:
        card["inputModes"] = list(skill.input_modes)
    if skill.output_modes:
        card["outputModes"] = list(skill.output_modes)
    return card


def _merged_skills(skills: Iterable[SkillConfig]) -> list[dict[str, Any]]:
    """First definition of an id wins; tags are merged so a query by any agent's tag matches."""
    merged: dict[str, dict[str, Any]] = {}
    for skill in skills:
        seen = merged.get(skill.id)
        if seen is None:
            merged[skill.id] = _skill(skill)
            continue
        tags: list[str] = seen["tags"]
        tags.extend(t for t in skill.tags or [] if t not in tags and len(tags) < MAX_TAGS)
    return list(merged.values())


def _agent_description(agent: AgentConfig, company: CompanyConfig) -> str:
    if agent.description:
        return agent.description
    about = [agent.role or "", f"{agent.department} department" if agent.department else ""]
    return ", ".join(part for part in about if part) or f"An agent of {company.name}."
