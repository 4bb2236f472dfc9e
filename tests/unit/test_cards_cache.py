"""Caching pieces: ETag matching, Cache-Control freshness, the LRU, and the card publisher's
per-node cache (keyed on the socket address, never the Host header)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from synthorg.cards import publisher as publisher_module
from synthorg.cards.lru import LruCache
from synthorg.cards.publisher import CardPublisher, socket_base_url
from synthorg.config.company import parse_config
from synthorg.http.caching import (
    DEFAULT_MAX_AGE,
    MAX_FRESHNESS,
    freshness_seconds,
    none_match,
    usable_etag,
)

ETAG = '"0123abcd"'


@pytest.mark.parametrize(
    "header",
    [ETAG, f"W/{ETAG}", f'"other", {ETAG}', f'  "x" ,W/{ETAG} ', "*", f'"a", "b",{ETAG}'],
)
def test_if_none_match_matches(header: str) -> None:
    assert none_match(header, ETAG)


@pytest.mark.parametrize("header", [None, "", '"other"', "0123abcd", 'W/"0123abc"', '"0123abcd'])
def test_if_none_match_does_not_match(header: str | None) -> None:
    assert not none_match(header, ETAG)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (None, DEFAULT_MAX_AGE),
        ("public", DEFAULT_MAX_AGE),
        ("public, max-age=60", 60),
        ("Max-Age=7", 7),
        ('max-age="12"', 12),
        ("no-cache", 0),
        ("public, no-store, max-age=600", 0),
        ("max-age=99999999999", MAX_FRESHNESS),
    ],
)
def test_freshness_from_cache_control(header: str | None, seconds: float) -> None:
    assert freshness_seconds(header) == seconds


def test_only_well_formed_etags_are_kept() -> None:
    assert usable_etag(' "abc" ') == '"abc"'
    assert usable_etag('W/"abc"') == 'W/"abc"'
    assert usable_etag(None) is None
    assert usable_etag("abc") is None
    assert usable_etag('"a\x01b"') is None
    assert usable_etag('"' + "a" * 500 + '"') is None


def test_lru_evicts_the_least_recently_used() -> None:
    cache: LruCache[str, int] = LruCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3)
    assert cache.keys() == ["a", "c"]
    assert cache.peek("b") is None


def test_lru_resize_evicts_at_once() -> None:
    cache: LruCache[str, int] = LruCache(5)
    for index, key in enumerate("abcde"):
        cache.put(key, index)
    cache.get("b")
    cache.resize(2)
    assert len(cache) == 2
    assert cache.keys() == ["e", "b"]
    cache.resize(10)
    cache.put("f", 5)
    assert len(cache) == 3
    with pytest.raises(ValueError):
        cache.resize(0)


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        ({"scheme": "http", "server": ("127.0.0.1", 8000)}, "http://127.0.0.1:8000"),
        ({"scheme": "https", "server": ("10.0.0.5", 443)}, "https://10.0.0.5"),
        ({"scheme": "http", "server": ("::1", 8001)}, "http://[::1]:8001"),
        ({"scheme": "gopher", "server": ("127.0.0.1", 80)}, "http://127.0.0.1"),
        ({"scheme": "http", "server": None}, "http://localhost"),
        ({"scheme": "http", "server": ("/run/node.sock", None)}, "http://localhost"),
        ({"scheme": "http", "server": ("evil.example", 80)}, "http://localhost"),
    ],
)
def test_socket_base_url(scope: dict[str, Any], expected: str) -> None:
    # Host headers are deliberately present and ignored.
    scope = {**scope, "headers": [(b"host", b"evil.example")]}
    assert socket_base_url(scope) == expected


def publisher(public_url: str | None = None) -> CardPublisher:
    text = "agents: [{id: a, name: A}, {id: b, name: B}]\na2a: {enabled: true}\n"
    data = yaml.safe_load(text)
    if public_url:
        data["a2a"]["public_url"] = public_url
    return CardPublisher(parse_config(data, "config.yaml"), "1.0.0")


def test_public_url_wins_over_the_socket() -> None:
    cards = publisher("https://node.example/")
    scope = {"scheme": "http", "server": ("127.0.0.1", 8000)}
    assert cards.base_url(scope) == "https://node.example"


def test_publisher_renders_once_per_base_and_agent() -> None:
    cards = publisher()
    assert cards.company_at("http://x:1") is cards.company_at("http://x:1")
    assert cards.agent_at("a", "http://x:1") is cards.agent_at("a", "http://x:1")
    assert cards.agent_at("a", "http://x:1") is not cards.agent_at("b", "http://x:1")
    assert cards.agent_at("nope", "http://x:1") is None


def test_publisher_cache_is_bounded_in_base_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(publisher_module, "MAX_BASE_URLS", 2)
    cards = publisher()
    for port in range(5):
        cards.company_at(f"http://x:{port}")
    assert cards.company_at("http://x:0") is cards.company_at("http://x:0")
    # rendered, not kept:
    assert cards.company_at("http://x:4") is not cards.company_at("http://x:4")
