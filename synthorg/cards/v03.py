"""A card in A2A 0.3's shape: the default card (both dialects' members) without 1.0's, as it
is served to a caller that asks with `A2A-Version: 0.3`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Json = dict[str, Any]

# 1.0's members of the default card, and of each of its security schemes.
V1_CARD_MEMBERS = frozenset({"supportedInterfaces", "securityRequirements"})
V1_SCHEME_MEMBERS = frozenset({"apiKeySecurityScheme", "httpAuthSecurityScheme"})


def card_v03_json(card: Mapping[str, Any]) -> Json:
    """The default card with 0.3's members only."""
    out = {name: value for name, value in card.items() if name not in V1_CARD_MEMBERS}
    if "securitySchemes" in out:
        out["securitySchemes"] = {
            name: {k: v for k, v in scheme.items() if k not in V1_SCHEME_MEMBERS}
            for name, scheme in out["securitySchemes"].items()
        }
    return out
