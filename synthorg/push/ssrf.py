"""Where a push may go: http(s) only, to public addresses, unless it is its owner's receiver.

A push URL comes from a caller, so it could aim this node at its own loopback, the private
network it sits in, or a cloud metadata service. The guard resolves the host and refuses any
address that does not reach a public host (`push.addresses`: loopback, private, link-local
and so the metadata address 169.254.169.254, shared, reserved, multicast, site-local, and
each of these inside an IPv6 transition form such as `::ffff:0:127.0.0.1`), unless the
node's config allows private networks, or the URL is the receiver of the peer that owns the
task: the peer's catalog endpoint (same scheme, host and port) with this node's receiver
path under it (federation members often sit on private networks). Only that URL is a
federation push, signed with the owner's link secret; a URL on another peer's endpoint is an
ordinary push (unsigned, and to a private address only when private networks are allowed),
so a caller cannot make this node sign for, or reach, a peer on its behalf. The addresses
the guard resolved are the ones the deliverer connects to (pinned), so a second DNS answer
cannot move the push elsewhere; each delivery resolves and checks them again.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from synthorg.push.addresses import reach
from synthorg.push.signing import receiver_path
from synthorg.store.catalog import PeerAddresses

DEFAULT_PORTS = {"http": 80, "https": 443}


class TargetRefused(Exception):
    """The URL is not a place this node pushes to; the message says why."""


class Unresolved(TargetRefused):
    """The URL's host does not resolve (now: a name may resolve later)."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # as written in the URL (lower-case), for Host and TLS verification
    port: int
    addresses: tuple[str, ...]  # resolved once; the connection goes to one of these
    peer: str | None  # the owning peer whose receiver this is (pushes to it are signed)


def _split(url: str) -> tuple[str, str, int]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise TargetRefused("the push url is not a valid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise TargetRefused("the push url must be http or https")
    if not parts.hostname:
        raise TargetRefused("the push url has no host")
    if parts.username is not None or parts.password is not None:
        raise TargetRefused("the push url must not carry credentials (use authentication)")
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def _path_and_query(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.path, parts.query


class TargetGuard:
    def __init__(
        self,
        peers: PeerAddresses,
        allow_private: Callable[[], bool] = lambda: False,
        node_name: str | None = None,
    ) -> None:
        self._peers = peers
        self._allow_private = allow_private
        self._node_name = node_name  # the name peers know this node by: their receiver path

    def receiver_of(self, owner: str | None, url: str) -> str | None:
        """`owner` when `url` is exactly its receiver for this node's pushes, else None."""
        if owner is None or not self._node_name:
            return None
        peer = self._peers.get(owner)
        if peer is None:
            return None
        try:
            same_origin = _split(peer.endpoint) == _split(url)
        except TargetRefused:
            return None
        base, _ = _path_and_query(peer.endpoint)
        path, query = _path_and_query(url)
        expected = base.rstrip("/") + receiver_path(self._node_name)
        return peer.name if same_origin and path == expected and not query else None

    async def check(self, url: str, owner: str | None = None) -> Target:
        """The URL's target with its addresses resolved, for a push of a task `owner` owns;
        TargetRefused when it may not be."""
        scheme, host, port = _split(url)
        addresses = await _resolve(host, port)
        peer = self.receiver_of(owner, url)
        if peer is None and not self._allow_private():
            for text in addresses:
                reached = reach(ipaddress.ip_address(text))
                if not reached.public:
                    raise TargetRefused(
                        f"the push url's host resolves to {reached.describe(text)}, "
                        "which this node does not push to"
                    )
        return Target(scheme, host, port, addresses, peer)


async def _resolve(host: str, port: int) -> tuple[str, ...]:
    try:  # a literal address needs no lookup
        return (str(ipaddress.ip_address(host.strip("[]"))),)
    except ValueError:
        pass
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            host, port, type=socket.SOCK_STREAM
        )
    except UnicodeError:  # no name at all (an empty label, say): no lookup could help
        raise TargetRefused("the push url's host is not a valid name") from None
    except socket.gaierror:
        raise Unresolved("the push url's host does not resolve") from None
    addresses = tuple(dict.fromkeys(str(info[4][0]).split("%")[0] for info in infos))
    if not addresses:
        raise Unresolved("the push url's host does not resolve")
    return addresses
