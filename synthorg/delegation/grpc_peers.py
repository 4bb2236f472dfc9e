"""Which peers this node calls over gRPC: the one rule, asked by the client before a gRPC
call and by the delegator before it chooses a peer's binding.

A peer of scheme mtls is never called over gRPC: its catalog record pins its server
certificate, and the pin is checked on HTTPS connections only (`synthorg/tls/outbound.py`),
as this node presents its client certificate over HTTPS only. Asking for it is a
misconfiguration of the record, refused before anything is sent, and never retried.
"""

from __future__ import annotations

from synthorg.delegation.errors import PeerMisconfigured
from synthorg.generated.constants import PEER_SCHEME_MTLS

MTLS_NOT_OVER_GRPC = (
    "configured for GRPC, but it authenticates by client certificate (scheme mtls), which "
    "this node presents over HTTPS only: set its binding to JSONRPC or HTTP+JSON"
)


def grpc_allowed(scheme: str) -> bool:
    """Whether a peer whose catalog record has `scheme` may be called over gRPC."""
    return scheme != PEER_SCHEME_MTLS


def refuse_grpc(peer: str, scheme: str) -> None:
    """PeerMisconfigured when the peer `peer` (of `scheme`) may not be called over gRPC."""
    if not grpc_allowed(scheme):
        raise PeerMisconfigured(f"{peer}: {MTLS_NOT_OVER_GRPC}")
