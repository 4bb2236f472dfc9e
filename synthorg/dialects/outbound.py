"""Which dialect to call a peer in: read from the peer's card, 1.0 when it offers it.

A card that lists a JSONRPC interface at protocol version 1.0 (`supportedInterfaces`) is
called in 1.0 at that interface's URL; anything else (a 0.3 card, no card, an unreadable
one) is called in 0.3 at the catalog endpoint, as before. The catalog record stays the
authority on where our credentials go: an interface URL on another origin than the record's
endpoint is not used.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlsplit

from synthorg.generated.constants import A2A_VERSION_0_3, A2A_VERSION_1_0
from synthorg.generated.models import PeerCard
from synthorg.http.version import major_minor

JSONRPC = "JSONRPC"


class PeerDialect(NamedTuple):
    version: str  # A2A_VERSION_0_3 or A2A_VERSION_1_0
    url: str  # the JSON-RPC endpoint to POST to


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:
        port = None
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def choose(card: PeerCard | None, endpoint: str, default_url: str) -> PeerDialect:
    """The dialect and URL to call a peer at; `default_url` is its 0.3 endpoint."""
    if card is not None:
        for entry in card.supportedInterfaces or []:
            if (
                entry.protocolBinding == JSONRPC
                and major_minor(entry.protocolVersion) == A2A_VERSION_1_0
                and _origin(entry.url) == _origin(endpoint)
            ):
                return PeerDialect(A2A_VERSION_1_0, entry.url)
    return PeerDialect(A2A_VERSION_0_3, default_url)
