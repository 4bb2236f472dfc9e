"""Reading a peer's card: project onto PeerCard, then validate strictly.

A peer's card comes from another implementation and may carry members our strict AgentCard
does not know (a newer 0.3.x field, a vendor extension). Rejecting those would cut us off from
a working peer; accepting the card wholesale would store and pass on whatever the peer sent.
So discovery copies only the members it uses (the same allowlist idea as our own cards), then
validates those against `PeerCard` in spec/schemas/card.json with the generated model. What is
kept is small and typed, and nothing else of the peer's document survives.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from synthorg.generated.models import PeerCard, PeerInterface

PEER_CARD_MEMBERS = (
    "name", "url", "version", "protocolVersion", "skills", "supportedInterfaces", "capabilities",
)
PEER_CAPABILITY_MEMBERS = ("streaming", "pushNotifications")
PEER_SKILL_MEMBERS = ("id", "name", "tags")
PEER_INTERFACE_MEMBERS = ("url", "protocolBinding", "protocolVersion")


MAX_INTERFACES = 16  # PeerCard.supportedInterfaces maxItems


def _valid_interface(entry: dict[str, Any]) -> bool:
    try:
        PeerInterface.model_validate(entry)
    except ValidationError:
        return False
    return True


class InvalidCard(ValueError):
    """The card lacks, or mistypes, a member we use. The message names it, never its value."""


def _pick(document: dict[str, Any], members: tuple[str, ...]) -> dict[str, Any]:
    return {key: document[key] for key in members if key in document}


def read_peer_card(document: Any) -> PeerCard:
    if not isinstance(document, dict):
        raise InvalidCard("the card is not a JSON object")
    picked = _pick(document, PEER_CARD_MEMBERS)
    skills = picked.get("skills")
    if isinstance(skills, list):
        # Items that are not objects are kept as they are, so validation reports them.
        picked["skills"] = [
            _pick(skill, PEER_SKILL_MEMBERS) if isinstance(skill, dict) else skill
            for skill in skills
        ]
    interfaces = picked.get("supportedInterfaces")
    if isinstance(interfaces, list):
        # Optional to us: an entry we cannot read is left out, never a reason to refuse the
        # card (a 0.3 peer, or one with a binding we do not speak, is still a peer).
        readable = [_pick(entry, PEER_INTERFACE_MEMBERS) for entry in interfaces
                    if isinstance(entry, dict)][:MAX_INTERFACES]
        picked["supportedInterfaces"] = [entry for entry in readable if _valid_interface(entry)]
        if "url" not in picked:  # an A2A 1.0 card: its endpoint is in its interfaces
            listed = picked["supportedInterfaces"]
            # its JSON-RPC one, else the first it lists (a peer serving HTTP+JSON or gRPC only)
            jsonrpc = [entry["url"] for entry in listed if entry["protocolBinding"] == "JSONRPC"]
            urls = jsonrpc or [entry["url"] for entry in listed]
            if urls:
                picked["url"] = urls[0]
    elif interfaces is not None:
        del picked["supportedInterfaces"]
    capabilities = picked.pop("capabilities", None)
    if isinstance(capabilities, dict):
        # Optional to us: a member that is not a boolean is left out, never a refusal.
        picked["capabilities"] = {
            key: capabilities[key] for key in PEER_CAPABILITY_MEMBERS
            if isinstance(capabilities.get(key), bool)
        }
    try:
        return PeerCard.model_validate(picked)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False, include_context=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "(card)"
        raise InvalidCard(f"{where}: {first['msg']}") from None
