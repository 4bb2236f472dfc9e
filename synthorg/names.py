"""Peer names and agent ids, by the patterns the spec gives them.

Peer names are canonical: trimmed and lower-cased, one spelling per peer, so the gates, the
catalog and the tasks agree. Agent ids appear in URL paths as they are.
"""

from __future__ import annotations

import re

from synthorg.generated.constants import AGENT_ID_PATTERN, PEER_NAME_PATTERN

_PEER_NAME_RE = re.compile(PEER_NAME_PATTERN)
_AGENT_ID_RE = re.compile(AGENT_ID_PATTERN)


def canonical_peer_name(raw: str) -> str | None:
    """Trim and lower-case `raw`; None when the result is not a valid peer name."""
    # ASCII first: str.lower() maps some non-ASCII letters (e.g. KELVIN SIGN) onto ASCII ones.
    if not isinstance(raw, str) or not raw.isascii():
        return None
    name = raw.strip().lower()
    return name if _PEER_NAME_RE.fullmatch(name) else None


def is_agent_id(value: str) -> bool:
    """True for a well-formed id; such an id is plain ASCII, safe in a path and a log line."""
    return _AGENT_ID_RE.fullmatch(value) is not None
