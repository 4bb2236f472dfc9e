"""Which binding and dialect to call a peer in: the operator's choice, else the peer's card.

A2A 1.0 lets a card list several interfaces (`supportedInterfaces`), each a binding
(JSON-RPC, HTTP+JSON, gRPC) at a protocol version and a URL. The order is:

1. the binding the operator configured on the peer's catalog record (`peers add --binding`):
   the card's first interface of that binding, else the binding at this node's own path under
   the catalog endpoint (a peer of ours serves every binding there);
2. else the card's first interface whose binding this client speaks.

JSON-RPC is spoken in 1.0 at the card's first JSONRPC 1.0 interface, else in 0.3 at the
catalog endpoint, as before any other binding was spoken (a card that lists JSON-RPC first, or
no card at all, is called exactly so). HTTP+JSON is 1.0 only. The catalog record stays the
authority on where our credentials go: an interface URL on another origin than the record's
endpoint is never used.
"""

from __future__ import annotations

from typing import NamedTuple, get_args
from urllib.parse import urlsplit

from synthorg.generated.constants import A2A_VERSION_0_3, A2A_VERSION_1_0
from synthorg.generated.models import PeerCard, SupportedInterface
from synthorg.http.version import major_minor

# The bindings a card may name, as the spec spells them.
BINDINGS: tuple[str, ...] = get_args(SupportedInterface.model_fields["protocolBinding"].annotation)
JSONRPC, GRPC, HTTP_JSON = BINDINGS
SPOKEN = (JSONRPC, HTTP_JSON)  # the bindings this client calls peers in


class PeerDialect(NamedTuple):
    version: str  # A2A_VERSION_0_3 or A2A_VERSION_1_0
    url: str  # the JSON-RPC endpoint to POST to; HTTP+JSON: the base of its routes
    binding: str = JSONRPC


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:
        port = None
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def _usable(card: PeerCard | None, endpoint: str) -> list[tuple[str, str | None, str]]:
    """(binding, version as major.minor, url) of each interface this client may call, in
    the card's order: a binding it speaks, on the record's origin."""
    if card is None:
        return []
    return [
        (entry.protocolBinding, major_minor(entry.protocolVersion), entry.url)
        for entry in card.supportedInterfaces or []
        if entry.protocolBinding in SPOKEN and _origin(entry.url) == _origin(endpoint)
    ]


def _jsonrpc(usable: list[tuple[str, str | None, str]], default_url: str) -> PeerDialect:
    for binding, version, url in usable:
        if binding == JSONRPC and version == A2A_VERSION_1_0:
            return PeerDialect(A2A_VERSION_1_0, url)
    return PeerDialect(A2A_VERSION_0_3, default_url)


def _http_json(usable: list[tuple[str, str | None, str]]) -> PeerDialect | None:
    for binding, version, url in usable:
        if binding == HTTP_JSON and version == A2A_VERSION_1_0:
            return PeerDialect(A2A_VERSION_1_0, url, HTTP_JSON)
    return None


def choose(
    card: PeerCard | None, endpoint: str, default_url: str,
    configured: str | None = None, default_rest_url: str | None = None,
) -> PeerDialect:
    """The binding, dialect and URL to call a peer at. `default_url` is its 0.3 JSON-RPC
    endpoint, `default_rest_url` where a peer of ours serves HTTP+JSON; `configured` the
    binding its catalog record names (None, or one this client does not speak: the card
    decides)."""
    usable = _usable(card, endpoint)
    if configured == HTTP_JSON:
        found = _http_json(usable)
        if found is not None:
            return found
        if default_rest_url is not None:
            return PeerDialect(A2A_VERSION_1_0, default_rest_url, HTTP_JSON)
    if configured != JSONRPC:
        for binding, version, url in usable:
            if binding == HTTP_JSON and version == A2A_VERSION_1_0:
                return PeerDialect(A2A_VERSION_1_0, url, HTTP_JSON)
            if binding == JSONRPC:
                break
    return _jsonrpc(usable, default_url)
