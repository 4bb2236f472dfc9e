"""A peer's pinned card key (`peers add --card-key`): the key that must sign its cards.

Two forms, stored as text in the peer's catalog record:

- a public JWK (P-256 or Ed25519), as JSON: the card must carry a signature by that key;
- `JWKS-URL#THUMBPRINT`: the key is fetched from the peer's JWKS (bounded, like a card), and
  only the key whose RFC 7638 thumbprint is the pinned one is used. The URL may move keys in
  and out; it cannot make us trust a key we did not pin.

A pinned peer whose card is unsigned, tampered, or signed by another key is refused: the card
is not kept, `peers list` and the admin API say why, and `a2a.card.refused` is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from synthorg.cards.keys import CardKeyError, PublicKey, public_jwk, public_key_from_jwk, thumbprint
from synthorg.cards.signing import CardSignatureError, Verified, verify

MAX_PIN_LENGTH = 4096
_THUMBPRINT = re.compile(r"[A-Za-z0-9_-]{43}")

FetchJson = Callable[[str], Awaitable[Any]]  # a JWKS URL -> its JSON document (raises on failure)


@dataclass(frozen=True)
class CardPin:
    text: str  # as stored: canonical JWK JSON, or URL#thumbprint
    key: PublicKey | None = None
    jwks_url: str | None = None
    thumbprint: str | None = None


def parse_pin(text: str) -> CardPin:
    """The pin, or ValueError saying what is wrong (never echoing the value)."""
    text = text.strip()
    if not text or len(text) > MAX_PIN_LENGTH:
        raise ValueError(f"card key must be 1 to {MAX_PIN_LENGTH} characters")
    if text.startswith("{"):
        try:
            key = public_key_from_jwk(json.loads(text))
        except CardKeyError as exc:
            raise ValueError(f"card key: {exc}") from None
        except ValueError:
            raise ValueError("card key: not JSON") from None
        canonical = json.dumps(public_jwk(key), sort_keys=True, separators=(",", ":"))
        return CardPin(canonical, key=key)
    url, sep, pinned = text.rpartition("#")
    parts = urlsplit(url)
    if (not sep or parts.scheme.lower() not in ("http", "https") or not parts.hostname
            or parts.username or parts.password or not _THUMBPRINT.fullmatch(pinned)):
        raise ValueError("card key must be a public JWK (JSON) or JWKS-URL#THUMBPRINT "
                         "(an http(s) URL and the key's 43-character RFC 7638 thumbprint)")
    return CardPin(text, jwks_url=url, thumbprint=pinned)


async def verify_pinned(document: Any, pin: CardPin, fetch_json: FetchJson) -> Verified:
    """CardSignatureError unless a signature over `document` is by the pinned key."""
    if not isinstance(document, dict):
        raise CardSignatureError("malformed", "the card is not a JSON object")
    if not document.get("signatures"):
        raise CardSignatureError("unsigned", "the card carries no signature")
    key = pin.key
    if key is None:
        assert pin.jwks_url is not None
        try:
            jwks = await fetch_json(pin.jwks_url)
        except Exception as exc:
            raise CardSignatureError("jwks_unavailable",
                                     f"the pinned JWKS could not be read ({exc})") from None
        key = _pinned_key(jwks, pin.thumbprint)
    return verify(document, [key])


def _pinned_key(jwks: Any, pinned: str | None) -> PublicKey:
    keys = jwks.get("keys") if isinstance(jwks, dict) else None
    for jwk in keys if isinstance(keys, list) else []:
        try:
            key = public_key_from_jwk({k: v for k, v in jwk.items() if k != "d"}
                                      if isinstance(jwk, dict) else jwk)
        except CardKeyError:
            continue
        if thumbprint(public_jwk(key)) == pinned:
            return key
    raise CardSignatureError("key_not_published", "the pinned key is not in the peer's JWKS")
