"""What a call to a peer can fail with, whichever binding carried it: imported from here by
the client, the bindings and everything that catches them."""

from __future__ import annotations

from typing import Any


class PeerError(Exception):
    """Calling a peer failed; the message is safe to show (no secret, no raw body)."""


class PeerRpcError(PeerError):
    """The peer refused the call: a JSON-RPC error, or the google.rpc.Status (HTTP+JSON,
    gRPC) standing for one. `http_status` is the answer's HTTP status (gRPC: the status the
    gRPC code maps to); `transport_status` the gRPC status code's name, for a gRPC call."""

    def __init__(self, code: int, message: str, http_status: int, data: Any = None,
                 transport_status: str | None = None) -> None:
        where = f"gRPC {transport_status}" if transport_status else f"HTTP {http_status}"
        super().__init__(f"peer error {code}: {message} ({where})")
        self.code, self.message, self.http_status, self.data = code, message, http_status, data
        self.transport_status = transport_status


class PeerUnavailable(PeerError):
    """The peer could not be reached, or kept answering with a transient failure."""


class PeerProtocolError(PeerError):
    """The peer answered something that is not a valid response to our request."""


class PeerMisconfigured(PeerError):
    """The peer's catalog record asks for a call this node does not make (an mtls peer over
    gRPC, `grpc_peers.py`): nothing is sent, and as trying again cannot help, no caller
    retries it; the message says what to change."""


class RequestInvalid(PeerError):
    """The call this node would make is not valid by the spec (a message past a bound): it
    is not sent, as the peer would refuse it."""


PIN_MISMATCH = "its certificate is not the one its catalog record pins"
