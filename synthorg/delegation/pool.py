"""The HTTP clients this node calls its peers with: one pooled client per peer while the node
serves, so a delegation's calls (send, each poll of `tasks/get`, cancel) reuse the peer's
connections instead of opening, and for https handshaking, one per call.

A peer's client is kept under what its connections depend on (`ConnectionKey`: the record's
endpoint and scheme, an mtls record's pin, the TLS context, the transport). A record edited
in the catalog (a new pin, another endpoint) asks for another key: the old client is retired,
closed once the calls still using it end, and no later call uses its connections. An mtls
peer's pin is checked on each new connection's TLS handshake by the request that opens it
(`synthorg.tls.outbound`), and every request through a pinned client carries that check, so
a pooled connection is one that passed it against the same pin.

Per call stay what they were: the deadline (a request's timeout), the response-size bound, the
retries and the trace headers. The pool opens with the node's background work and closes with
it; closed (the CLI, a node not serving), each call has a client of its own, as before.
Streams keep connections of their own (`sse_client.py`): one lives as long as its task.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import NamedTuple

import httpx


class ConnectionKey(NamedTuple):
    """What a peer's connections depend on: a call with another key needs other ones."""

    endpoint: str
    scheme: str
    pin: str | None  # an mtls record's: each new connection's certificate must have it
    verify: ssl.SSLContext
    transport: httpx.AsyncBaseTransport | None


@dataclass(eq=False)
class _Pooled:
    key: ConnectionKey
    http: httpx.AsyncClient
    users: int = 0
    retired: bool = False


# An idle connection is let go before a peer would close it (a node's keep-alive is 5 s by
# default, as uvicorn's): one closed by the peer as a call goes out on it fails that call.
# No cap on connections in use (as when each call had its own): a peer's many concurrent
# calls never queue for one; a few idle ones are kept.
LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=20, keepalive_expiry=4.0)


def new_client(key: ConnectionKey) -> httpx.AsyncClient:
    """A client for calls under `key` (each request passes its own timeout)."""
    return httpx.AsyncClient(transport=key.transport, verify=key.verify,
                             limits=LIMITS)


class ClientPool:
    def __init__(self, make: Callable[[ConnectionKey], httpx.AsyncClient] = new_client) -> None:
        self._make = make
        self._open = False
        self._clients: dict[str, _Pooled] = {}  # by peer name
        self._retired: list[_Pooled] = []  # replaced, still in use by a call

    def open(self) -> None:
        """Keep clients from now on (the node serves)."""
        self._open = True

    @contextlib.asynccontextmanager
    async def client(self, peer: str, key: ConnectionKey) -> AsyncIterator[httpx.AsyncClient]:
        """The client a call to `peer` is made with: the peer's pooled one when the pool is
        open and its key is `key`, else a new one (pooled if open; closed after the call if
        not)."""
        if not self._open:
            async with self._make(key) as http:
                yield http
            return
        pooled = self._clients.get(peer)
        if pooled is None or pooled.key != key:
            if pooled is not None:
                await self._retire(pooled)
            pooled = self._clients[peer] = _Pooled(key, self._make(key))
        pooled.users += 1
        try:
            yield pooled.http
        finally:
            pooled.users -= 1
            if pooled.users == 0 and pooled in self._retired:
                self._retired.remove(pooled)
                await pooled.http.aclose()

    async def _retire(self, pooled: _Pooled) -> None:
        pooled.retired = True
        if pooled.users == 0:
            await pooled.http.aclose()
        else:  # closed by its last call
            self._retired.append(pooled)

    async def aclose(self) -> None:
        """Close every client (the node stops serving); calls from now on have their own."""
        self._open = False
        clients, self._clients = list(self._clients.values()), {}
        retired, self._retired = self._retired, []
        for pooled in clients + retired:
            pooled.retired = True
            with contextlib.suppress(Exception):  # a connection that is gone already
                await pooled.http.aclose()
