"""Agent ids as they appear in URL paths (`AgentId` in spec/schemas/config.json)."""

from __future__ import annotations

import re

# Kept equal to the spec's AgentId pattern; a unit test compares the two.
AGENT_ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"

_AGENT_ID_RE = re.compile(AGENT_ID_PATTERN)


def is_agent_id(value: str) -> bool:
    """True for a well-formed id; such an id is plain ASCII, safe in a path and a log line."""
    return _AGENT_ID_RE.fullmatch(value) is not None
