"""Which dialect the client calls a peer in, from the peer's card (synthorg/dialects/outbound.py)
and reading 1.0-only cards (synthorg/cards/peer_card.py)."""

from __future__ import annotations

from typing import Any

from synthorg.cards.peer_card import read_peer_card
from synthorg.dialects.outbound import PeerDialect, choose

ENDPOINT = "http://127.0.0.1:8100"
DEFAULT = ENDPOINT + "/api/v1/a2a/"


def card(*interfaces: dict[str, str], url: str | None = ENDPOINT + "/rpc") -> dict[str, Any]:
    document: dict[str, Any] = {"name": "p", "skills": [], "supportedInterfaces": list(interfaces)}
    if url is not None:
        document["url"] = url
    return document


def interface(
    version: str, url: str = ENDPOINT + "/rpc", binding: str = "JSONRPC"
) -> dict[str, str]:
    return {"url": url, "protocolBinding": binding, "protocolVersion": version, "tenant": "t"}


def test_a_card_offering_1_0_over_jsonrpc_is_called_in_1_0_at_that_url() -> None:
    read = read_peer_card(card(interface("0.3"), interface("1.0")))
    assert choose(read, ENDPOINT, DEFAULT) == PeerDialect("1.0", ENDPOINT + "/rpc")


def test_a_0_3_card_or_no_card_is_called_in_0_3_at_the_catalog_endpoint() -> None:
    assert choose(read_peer_card(card(interface("0.3.0"))), ENDPOINT, DEFAULT) == PeerDialect(
        "0.3", DEFAULT
    )
    assert choose(None, ENDPOINT, DEFAULT) == PeerDialect("0.3", DEFAULT)


def test_1_0_on_another_binding_or_origin_is_not_used() -> None:
    grpc = read_peer_card(card(interface("1.0", binding="GRPC")))
    assert choose(grpc, ENDPOINT, DEFAULT).version == "0.3"
    elsewhere = read_peer_card(card(interface("1.0", url="http://evil.example/rpc")))
    assert choose(elsewhere, ENDPOINT, DEFAULT) == PeerDialect("0.3", DEFAULT)


def test_a_1_0_card_without_url_is_read_from_its_jsonrpc_interface() -> None:
    read = read_peer_card(card(interface("1.0", url=ENDPOINT + "/a2a"), url=None))
    assert read.url == ENDPOINT + "/a2a"
    assert [i.protocolVersion for i in read.supportedInterfaces or []] == ["1.0"]


def test_unreadable_interfaces_are_left_out_not_a_reason_to_refuse_the_card() -> None:
    document = card(
        interface("1.0"),
        {"url": "ftp://x", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"protocolBinding": "JSONRPC"},
        "not an object",
    )
    read = read_peer_card(document)
    assert [i.url for i in read.supportedInterfaces or []] == [ENDPOINT + "/rpc"]
    assert read_peer_card({**card(), "supportedInterfaces": "nonsense"}).supportedInterfaces is None
