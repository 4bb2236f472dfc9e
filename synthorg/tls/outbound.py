"""Calls to an mtls peer check its server certificate against the record's pin too, before a
byte of the request is sent: the pin names the peer in both directions.

httpcore reports each finished TLS handshake to a request's `trace` extension; the callback
here reads the certificate from that connection and, if its key is not the pinned one, closes
the connection and raises `PinMismatch`, so the request is never written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from synthorg.generated.constants import PEER_SCHEME_MTLS
from synthorg.tls import pins

TLS_DONE = "connection.start_tls.complete"

Trace = Callable[[str, dict[str, Any]], Awaitable[None]]


class PinMismatch(Exception):
    """The peer's server certificate is not the one its catalog record pins."""


def pinned(pin: str) -> Trace:
    """A `trace` extension that lets a connection carry the request only to the pinned key."""

    async def trace(event: str, info: dict[str, Any]) -> None:
        if event != TLS_DONE:
            return
        stream = info.get("return_value")
        if not server_matches(stream.get_extra_info("ssl_object") if stream else None, pin):
            if stream is not None:
                await stream.aclose()
            raise PinMismatch

    return trace


def server_matches(ssl_object: Any, pin: str) -> bool:
    """Whether a connection's TLS object shows the server certificate `pin` names (any
    connection to an mtls peer: this module's httpx calls, the push sender's own sockets)."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    return pins.matches(der, pin)


def request_extensions(scheme: str, secret: str) -> dict[str, Any]:
    """What a request to a peer with this record carries: for mtls, the pin check."""
    return {"trace": pinned(secret)} if scheme == PEER_SCHEME_MTLS else {}
