"""Where a push may go: http(s) only, to public addresses, unless it is a catalog peer.

A push URL comes from a caller, so it could aim this node at its own loopback, the private
network it sits in, or a cloud metadata service. The guard resolves the host and refuses any
address that is not globally routable (loopback, private, link-local and so the metadata
address 169.254.169.254, shared, reserved, multicast), unless the URL's host and port are a
catalog peer's endpoint (federation members often sit on private networks) or the node's
config allows private networks. The addresses it resolved are the ones the deliverer
connects to (pinned), so a second DNS answer cannot move the push elsewhere.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from synthorg.store.catalog import PeerAddresses

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
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
    peer: str | None  # the catalog peer whose endpoint this is (pushes to it are signed)


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


def _public(address: IpAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


class TargetGuard:
    def __init__(
        self, peers: PeerAddresses, allow_private: Callable[[], bool] = lambda: False
    ) -> None:
        self._peers = peers
        self._allow_private = allow_private

    def peer_for(self, scheme: str, host: str, port: int) -> str | None:
        for peer in self._peers.list():
            try:
                p_scheme, p_host, p_port = _split(peer.endpoint)
            except TargetRefused:
                continue
            if (p_scheme, p_host, p_port) == (scheme, host, port):
                return peer.name
        return None

    async def check(self, url: str) -> Target:
        """The URL's target with its addresses resolved; TargetRefused when it may not be."""
        scheme, host, port = _split(url)
        addresses = await _resolve(host, port)
        peer = self.peer_for(scheme, host, port)
        if peer is None and not self._allow_private():
            for text in addresses:
                if not _public(ipaddress.ip_address(text)):
                    raise TargetRefused(
                        f"the push url's host resolves to {text}, a loopback, private, "
                        "link-local or reserved address this node does not push to"
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
