"""HTTP caching rules for cards: ETag matching (RFC 9110 §13.1.2) and Cache-Control freshness."""

from __future__ import annotations

import re

DEFAULT_MAX_AGE = 300  # seconds; also what this node's own cards announce
MAX_FRESHNESS = 86400  # a peer cannot pin its card in our cache for longer than a day
_MAX_AGE = re.compile(r"max-age\s*=\s*\"?([0-9]{1,10})\"?", re.IGNORECASE)
# An entity tag as RFC 9110 writes it; anything else from a peer is not sent back.
_ETAG = re.compile(r'(W/)?"[\x21\x23-\x7e]{0,200}"')


def none_match(if_none_match: str | None, etag: str) -> bool:
    """Whether `If-None-Match` names `etag`: weak comparison, lists and `*` allowed."""
    if not if_none_match:
        return False
    for candidate in if_none_match.split(","):
        tag = candidate.strip()
        if tag == "*":
            return True
        if tag.startswith("W/"):
            tag = tag[2:]
        if tag == etag:
            return True
    return False


def freshness_seconds(cache_control: str | None, default: float = DEFAULT_MAX_AGE) -> float:
    """How long a response may be reused without asking again."""
    if not cache_control:
        return default
    directives = cache_control.lower()
    if "no-store" in directives or "no-cache" in directives:
        return 0.0
    match = _MAX_AGE.search(cache_control)
    if match is None:
        return default
    return float(min(int(match.group(1)), MAX_FRESHNESS))


def usable_etag(value: str | None) -> str | None:
    """A peer's ETag when it is well formed and short enough to send back; else None."""
    if value is None:
        return None
    value = value.strip()
    return value if _ETAG.fullmatch(value) else None
