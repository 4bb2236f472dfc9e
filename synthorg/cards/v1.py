"""A card in A2A 1.0's shape: the public card (0.3 members and `supportedInterfaces`) with
1.0's members only, as the extended card's 1.0 method answers it and as the public card is
served to a caller that asks with `A2A-Version: 1.0`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Json = dict[str, Any]


def _copy(source: Mapping[str, Any], target: Json, *names: str) -> Json:
    for name in names:
        if name in source:
            target[name] = source[name]
    return target


_CARD_MEMBERS = (
    "name", "description", "supportedInterfaces", "provider", "version", "documentationUrl",
    "defaultInputModes", "defaultOutputModes", "iconUrl",
)
_SKILL_MEMBERS = ("id", "name", "description", "tags", "examples", "inputModes", "outputModes")
_CAPABILITY_MEMBERS = ("streaming", "pushNotifications", "extendedAgentCard", "extensions")


def scheme_v1(scheme: Mapping[str, Any]) -> Json | None:
    """A 0.3 security scheme as 1.0's one-member object naming its kind."""
    if scheme.get("type") == "apiKey":
        inner = _copy(scheme, {"location": scheme["in"], "name": scheme["name"]}, "description")
        return {"apiKeySecurityScheme": inner}
    if scheme.get("type") == "http":
        inner = _copy(scheme, {"scheme": scheme["scheme"]}, "bearerFormat", "description")
        return {"httpAuthSecurityScheme": inner}
    return None  # a kind this node does not use


def card_v1_json(card: Mapping[str, Any]) -> Json:
    """A card (0.3 members and supportedInterfaces) with 1.0's members only."""
    out = _copy(card, {}, *_CARD_MEMBERS)
    out["capabilities"] = _copy(card["capabilities"], {}, *_CAPABILITY_MEMBERS)
    if "extensions" in out["capabilities"]:
        # 1.0's AgentExtension.required is a plain proto3 bool: false is its default, which
        # the protobuf JSON mapping (and so a card signature's canonical form) leaves out.
        out["capabilities"]["extensions"] = [
            {k: v for k, v in extension.items() if not (k == "required" and v is False)}
            for extension in out["capabilities"]["extensions"]
        ]
    out["skills"] = [_copy(skill, {}, *_SKILL_MEMBERS) for skill in card["skills"]]
    schemes = {name: scheme_v1(s) for name, s in card.get("securitySchemes", {}).items()}
    if schemes:
        out["securitySchemes"] = {name: s for name, s in schemes.items() if s is not None}
    if "security" in card:
        out["securityRequirements"] = security_requirements_v1(card["security"])
    return out


def security_requirements_v1(security: Sequence[Mapping[str, list[str]]]) -> list[Json]:
    """0.3's `security` alternatives as 1.0's `securityRequirements`."""
    return [
        {"schemes": {name: {"list": scopes} for name, scopes in requirement.items()}}
        for requirement in security
    ]
