"""Which binding and dialect to call a peer in: the operator's choice, else the peer's card.

A2A 1.0 lets a card list several interfaces (`supportedInterfaces`), each a binding
(JSON-RPC, HTTP+JSON, gRPC) at a protocol version and a URL. The order is:

1. the binding the operator configured on the peer's catalog record (`peers add --binding`):
   the card's first interface of that binding, else the binding at this node's own path under
   the catalog endpoint (a peer of ours serves every binding there);
2. else the card's first interface whose binding this client speaks.

JSON-RPC is spoken in 1.0 at the card's first JSONRPC 1.0 interface, else in 0.3 at the
catalog endpoint, as before any other binding was spoken (a card that lists JSON-RPC first, or
no card at all, is called exactly so). HTTP+JSON and gRPC are 1.0 only. The catalog record
stays the authority on where our credentials go: an interface URL on another origin than the
record's endpoint is never used.

A gRPC interface names a target, `host:port` (as A2A's gRPC binding and the node's own card
write it; `[v6]:port` too), or `grpc://host:port` / `grpcs://host:port`. Its port is the gRPC
listener's own, so only its host must be the endpoint's; it is spoken over TLS when the
endpoint is https or the target says `grpcs`, so a `grpc://` target of an https peer (a
downgrade) is not used. The chosen target is written `grpcs://host:port` or
`grpc://host:port`, so the channel needs nothing else to know how to connect. A peer of ours
serves gRPC only where its card says (`server.grpc_port`): configured for gRPC, a peer whose
card lists no usable gRPC interface is not called at all (`BindingUnusable`). Nor is a peer
of scheme mtls called over gRPC (its certificate pin is checked on HTTPS connections only):
configured so it is refused, and its card's gRPC interfaces are passed over.
"""

from __future__ import annotations

import re
from typing import NamedTuple, get_args
from urllib.parse import urlsplit

from synthorg.generated.constants import A2A_VERSION_0_3, A2A_VERSION_1_0
from synthorg.generated.models import PeerCard, SupportedInterface
from synthorg.http.version import major_minor

# The bindings a card may name, as the spec spells them.
BINDINGS: tuple[str, ...] = get_args(SupportedInterface.model_fields["protocolBinding"].annotation)
JSONRPC, GRPC, HTTP_JSON = BINDINGS
SPOKEN = (JSONRPC, HTTP_JSON, GRPC)  # the bindings this client calls peers in
GRPC_SCHEMES = ("grpc", "grpcs")
_TARGET = re.compile(
    r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^\s/:@\[\]?#]+)):(?P<port>[0-9]{1,5})")


class BindingUnusable(ValueError):
    """The binding a peer is configured for cannot be spoken to it (gRPC: its card lists no
    target this client may use, or the peer authenticates by client certificate); the
    message says why."""


class GrpcTarget(NamedTuple):
    host: str  # lower-case; an IPv6 address without its brackets
    port: int
    tls: bool | None  # None: `host:port`, which does not say

    @property
    def address(self) -> str:
        """The target as a gRPC channel names it."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def grpc_target(url: str) -> GrpcTarget | None:
    """A gRPC interface's target: `host:port`, `[v6]:port`, `grpc://host:port` or
    `grpcs://host:port`; None for anything else (a path, user info, a port past 65535)."""
    tls: bool | None = None
    scheme, sep, rest = url.partition("://")
    if sep:
        if scheme.lower() not in GRPC_SCHEMES:
            return None
        tls = scheme.lower() == "grpcs"
        url = rest.removesuffix("/")
    match = _TARGET.fullmatch(url)
    if match is None:
        return None
    port = int(match["port"])
    if not 0 < port < 65536:
        return None
    return GrpcTarget((match["v6"] or match["host"]).lower(), port, tls)


def grpc_url(url: str, endpoint: str) -> str | None:
    """A gRPC interface's target as this client calls it (`grpcs://host:port` or
    `grpc://host:port`), or None when it may not be: not a target, on another host than the
    endpoint's, or in the clear for an https endpoint."""
    target = grpc_target(url)
    scheme, host, _ = _origin(endpoint)
    if target is None or target.host != host.strip("[]"):
        return None
    secure = scheme == "https"
    if target.tls is False and secure:
        return None
    tls = secure or bool(target.tls)
    return f"{'grpcs' if tls else 'grpc'}://{target.address}"


class PeerDialect(NamedTuple):
    version: str  # A2A_VERSION_0_3 or A2A_VERSION_1_0
    url: str  # the JSON-RPC endpoint to POST to; HTTP+JSON: the base of its routes; gRPC:
    # its target, `grpc://host:port` or `grpcs://host:port` (`grpc_url`)
    binding: str = JSONRPC


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:
        port = None
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def _usable(
    card: PeerCard | None, endpoint: str, spoken: tuple[str, ...],
) -> list[tuple[str, str | None, str]]:
    """(binding, version as major.minor, url) of each interface this client may call, in
    the card's order: a binding in `spoken`, on the record's origin (gRPC: its host)."""
    if card is None:
        return []
    usable = []
    for entry in card.supportedInterfaces or []:
        url: str | None = entry.url
        if entry.protocolBinding not in spoken:
            url = None
        elif entry.protocolBinding == GRPC:
            url = grpc_url(entry.url, endpoint)
        elif _origin(entry.url) != _origin(endpoint):
            url = None
        if url is not None:
            usable.append((entry.protocolBinding, major_minor(entry.protocolVersion), url))
    return usable


def _jsonrpc(usable: list[tuple[str, str | None, str]], default_url: str) -> PeerDialect:
    for binding, version, url in usable:
        if binding == JSONRPC and version == A2A_VERSION_1_0:
            return PeerDialect(A2A_VERSION_1_0, url)
    return PeerDialect(A2A_VERSION_0_3, default_url)


def _v1(usable: list[tuple[str, str | None, str]], wanted: str) -> PeerDialect | None:
    """The first 1.0 interface of binding `wanted` (HTTP+JSON or gRPC: 1.0 only)."""
    for binding, version, url in usable:
        if binding == wanted and version == A2A_VERSION_1_0:
            return PeerDialect(A2A_VERSION_1_0, url, wanted)
    return None


def choose(
    card: PeerCard | None, endpoint: str, default_url: str,
    configured: str | None = None, default_rest_url: str | None = None, *,
    mtls: bool = False,
) -> PeerDialect:
    """The binding, dialect and URL to call a peer at. `default_url` is its 0.3 JSON-RPC
    endpoint, `default_rest_url` where a peer of ours serves HTTP+JSON; `configured` the
    binding its catalog record names (None, or one this client does not speak: the card
    decides); `mtls` whether the peer authenticates by client certificate (then gRPC is
    not spoken; the delegator refuses such a peer configured for gRPC before it asks, see
    `synthorg.delegation.grpc_peers`). BindingUnusable when gRPC is configured and cannot be
    spoken."""
    usable = _usable(card, endpoint, tuple(b for b in SPOKEN if not (mtls and b == GRPC)))
    if configured == HTTP_JSON:
        found = _v1(usable, HTTP_JSON)
        if found is not None:
            return found
        if default_rest_url is not None:
            return PeerDialect(A2A_VERSION_1_0, default_rest_url, HTTP_JSON)
    if configured == GRPC:
        found = _v1(usable, GRPC)
        if found is None:
            raise BindingUnusable(
                "configured for GRPC, but its card lists no A2A 1.0 gRPC interface on the "
                "catalog endpoint's host"
            )
        return found
    if configured != JSONRPC:
        for binding, version, url in usable:
            if binding in (HTTP_JSON, GRPC) and version == A2A_VERSION_1_0:
                return PeerDialect(A2A_VERSION_1_0, url, binding)
            if binding == JSONRPC:
                break
    return _jsonrpc(usable, default_url)
