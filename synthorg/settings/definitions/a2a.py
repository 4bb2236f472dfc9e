"""The `a2a` runtime settings namespace: keys, types, defaults and allowed ranges.

Defaults and ranges are the A2AConfig schema's (spec/schemas/config.json), so the file and the
runtime write can never disagree about what is valid.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from synthorg.contract.spec import all_definitions

NAMESPACE = "a2a"
KEYS = (
    "client_timeout_seconds",
    "push_verification_clock_skew_seconds",
    "card_cache_max_entries",
    "max_message_parts",
    "peer_rate_limit_per_second",
    "peer_rate_limit_burst",
)


@dataclass(frozen=True)
class SettingDefinition:
    key: str  # without the namespace
    type: str  # "number" or "integer"
    default: float | int
    minimum: float | int
    maximum: float | int
    description: str

    @property
    def name(self) -> str:
        return f"{NAMESPACE}.{self.key}"

    def coerce(self, value: Any) -> float | int:
        """The value if it has the right type and range; ValueError naming key and range."""
        ok_type = (
            isinstance(value, int) and not isinstance(value, bool)
            if self.type == "integer"
            else isinstance(value, int | float) and not isinstance(value, bool)
        )
        if not ok_type or value != value:  # NaN is never in range
            raise ValueError(f"{self.name} must be {self.describe_range()}; got {_given(value)}")
        if not self.minimum <= value <= self.maximum:
            raise ValueError(f"{self.name} must be {self.describe_range()}; got {value}")
        return float(value) if self.type == "number" else int(value)

    def describe_range(self) -> str:
        kind = "an integer" if self.type == "integer" else "a number"
        return f"{kind} from {self.minimum} to {self.maximum}"


def _given(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


@cache
def definitions() -> dict[str, SettingDefinition]:
    """Key -> definition, read once from the A2AConfig schema."""
    properties = all_definitions()["A2AConfig"][1]["properties"]
    return {
        key: SettingDefinition(
            key=key,
            type=properties[key]["type"],
            default=properties[key]["default"],
            minimum=properties[key]["minimum"],
            maximum=properties[key]["maximum"],
            description=properties[key].get("description", ""),
        )
        for key in KEYS
    }
