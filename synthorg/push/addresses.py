"""What an IP address reaches: a public host, or somewhere a caller must not aim this node.

Decided here rather than by `ipaddress`'s `is_global` alone: its tables vary between Python
releases, and an IPv6 address can carry an IPv4 one that is what a packet finally reaches
(`::ffff:127.0.0.1` is loopback however the IPv6 tables see it). Every IPv6 transition form
is unwrapped and its IPv4 address classified in its place:

- IPv4-mapped `::ffff:a.b.c.d` and IPv4-compatible `::a.b.c.d`;
- IPv4-translated `::ffff:0:a.b.c.d` (SIIT);
- NAT64 with the well-known prefix `64:ff9b::/96`;
- 6to4 `2002:AABB:CCDD::/48`;
- Teredo `2001:0::/32`: its server and its (obfuscated) client, both.

NAT64's local-use prefix `64:ff9b:1::/48` is refused whole: where the IPv4 address sits in it
depends on a prefix length only the operator's translator knows. Site-local `fec0::/10`
(deprecated, still routed inside some sites) is refused too.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

IPv4 = ipaddress.IPv4Address
IPv6 = ipaddress.IPv6Address
PUBLIC = "public"

_V4_NOT_PUBLIC = tuple(ipaddress.ip_network(net) for net in (
    "0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24",
    "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4",
))
_MAPPED = ipaddress.ip_network("::ffff:0:0/96")
_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
_COMPATIBLE = ipaddress.ip_network("::/96")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_TEREDO = ipaddress.ip_network("2001::/32")
_SITE_LOCAL = ipaddress.ip_network("fec0::/10")
_V6_NOT_PUBLIC = tuple(ipaddress.ip_network(net) for net in (
    "100::/64", "2001:db8::/32", "3fff::/20", "5f00::/16",  # discard, documentation, SRv6
))


@dataclass(frozen=True)
class Reach:
    kind: str  # PUBLIC, or what the address reaches instead ("loopback", "private", ...)
    via: IPv4 | None = None  # the IPv4 address an IPv6 one carries, when that decided it

    @property
    def public(self) -> bool:
        return self.kind == PUBLIC

    def describe(self, address: str) -> str:
        carried = f" (it carries {self.via})" if self.via is not None else ""
        return f"{address}, a {self.kind} address{carried}"


def _v4(address: IPv4) -> str:
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if address in _V4_NOT_PUBLIC[1]:
        return "shared"
    if address.is_private:
        return "private"
    if address.is_reserved or not address.is_global or any(
        address in net for net in _V4_NOT_PUBLIC
    ):
        return "reserved"
    return PUBLIC


def embedded_ipv4(address: IPv6) -> tuple[IPv4, ...]:
    """The IPv4 addresses a transition form of IPv6 carries (none for a plain one)."""
    value = int(address)
    low = IPv4(value & 0xFFFFFFFF)
    if address in _MAPPED or address in _TRANSLATED or address in _NAT64:
        return (low,)
    if address in _COMPATIBLE and value > 1:  # :: and ::1 are IPv6's own
        return (low,)
    if address in _SIX_TO_FOUR:
        return (IPv4((value >> 80) & 0xFFFFFFFF),)
    if address in _TEREDO:
        server = IPv4((value >> 64) & 0xFFFFFFFF)
        return (server, IPv4(~value & 0xFFFFFFFF))
    return ()


def _v6(address: IPv6) -> Reach:
    if address.is_unspecified:
        return Reach("unspecified")
    if address.is_loopback:
        return Reach("loopback")
    carried = embedded_ipv4(address)
    for inner in carried:
        kind = _v4(inner)
        if kind != PUBLIC:
            return Reach(kind, inner)
    if carried and address not in _TEREDO:
        return Reach(PUBLIC, carried[0])  # reaches that public IPv4 host
    if address in _NAT64_LOCAL:
        return Reach("local-use NAT64")
    if address in _SITE_LOCAL:
        return Reach("site-local")
    if address.is_link_local:
        return Reach("link-local")
    if address.is_multicast:
        return Reach("multicast")
    if address.is_private and not address.is_reserved:
        return Reach("private")
    if address.is_reserved or not address.is_global or any(
        address in net for net in _V6_NOT_PUBLIC
    ):
        return Reach("reserved")
    return Reach(PUBLIC)


def reach(address: IPv4 | IPv6) -> Reach:
    """What connecting to `address` reaches."""
    if isinstance(address, IPv6):
        return _v6(address)
    return Reach(_v4(address))
