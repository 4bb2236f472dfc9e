"""What an address reaches, as the push SSRF guard sees it: every IPv6 transition form is
classified by the IPv4 address it carries, whatever the running Python's tables say."""

from __future__ import annotations

import ipaddress

import pytest

from synthorg.push.addresses import embedded_ipv4, reach


@pytest.mark.parametrize("text,kind,via", [
    ("127.0.0.1", "loopback", None),
    ("10.1.2.3", "private", None),
    ("169.254.169.254", "link-local", None),
    ("100.64.0.1", "shared", None),
    ("0.0.0.0", "unspecified", None),
    ("224.0.0.1", "multicast", None),
    ("192.0.0.8", "reserved", None),
    ("240.0.0.1", "private", None),  # reserved, and Python calls it private: not public
    ("::", "unspecified", None),
    ("::1", "loopback", None),
    ("fe80::1", "link-local", None),
    ("fc00::1", "private", None),
    ("ff02::1", "multicast", None),
    ("fec0::1", "site-local", None),
    ("100::1", "reserved", None),
    ("5f00::1", "reserved", None),
    ("::127.0.0.1", "loopback", "127.0.0.1"),  # IPv4-compatible
    ("::ffff:127.0.0.1", "loopback", "127.0.0.1"),  # IPv4-mapped
    ("::ffff:0:127.0.0.1", "loopback", "127.0.0.1"),  # IPv4-translated
    ("64:ff9b::7f00:1", "loopback", "127.0.0.1"),  # NAT64, well-known prefix
    ("64:ff9b::a9fe:a9fe", "link-local", "169.254.169.254"),
    ("64:ff9b:1::808:808", "local-use NAT64", None),  # where the IPv4 sits is not knowable
    ("2002:7f00:1::1", "loopback", "127.0.0.1"),  # 6to4
    ("2002:a00:1::1", "private", "10.0.0.1"),
    # Teredo: server 65.54.227.120, client 192.0.2.45 (obfuscated as 3fff:fdd2)
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "private", "192.0.2.45"),
    ("2001:0:7f00:1:8000:63bf:3fff:fdd2", "loopback", "127.0.0.1"),
])
def test_an_address_that_reaches_no_public_host_is_named_for_what_it_reaches(
    text: str, kind: str, via: str | None
) -> None:
    got = reach(ipaddress.ip_address(text))
    assert not got.public
    assert got.kind == kind
    assert got.via == (None if via is None else ipaddress.IPv4Address(via))


@pytest.mark.parametrize("text", [
    "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
])
def test_a_public_address_in_any_form_is_public(text: str) -> None:
    assert reach(ipaddress.ip_address(text)).public


def test_a_plain_ipv6_address_carries_no_ipv4() -> None:
    assert embedded_ipv4(ipaddress.IPv6Address("2606:4700::1111")) == ()
