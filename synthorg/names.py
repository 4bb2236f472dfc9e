"""Peer-name canon: one spelling per peer, so the gates, catalog and tasks agree."""

from __future__ import annotations

import re

# Anchored so the same string works in JSON Schema `pattern` and with re.fullmatch.
PEER_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,62}$"
PEER_NAME_MAX_LENGTH = 63

_PEER_NAME_RE = re.compile(PEER_NAME_PATTERN)


def canonical_peer_name(raw: str) -> str | None:
    """Trim and lower-case `raw`; None when the result is not a valid peer name."""
    # ASCII first: str.lower() maps some non-ASCII letters (e.g. KELVIN SIGN) onto ASCII ones.
    if not isinstance(raw, str) or not raw.isascii():
        return None
    name = raw.strip().lower()
    return name if _PEER_NAME_RE.fullmatch(name) else None
