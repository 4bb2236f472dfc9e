"""Card signatures as A2A 1.0 defines them: a JWS (RFC 7515) whose payload is the card's RFC
8785 (JCS) canonical form without `signatures`, carried detached in the card's `signatures`
as `{protected, signature}`.

The payload leaves out empty strings, lists and objects (1.0's "default values are omitted"),
as the official SDK's signer and verifier do, so a card survives a reader that drops them.
A verifier also tries the card exactly as received, for signers that kept them.

JOSE is PyJWT's and canonicalisation the `rfc8785` package's (docs/card-signatures.md says
why). ES256 signatures are deterministic (RFC 6979): every replica holding the key signs a
card to the same bytes, so one card has one strong ETag wherever it is served.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import rfc8785
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from jwt import PyJWS
from jwt.algorithms import ECAlgorithm, OKPAlgorithm
from jwt.exceptions import PyJWTError
from jwt.utils import der_to_raw_signature

from synthorg.cards.keys import CardKey, PublicKey
from synthorg.generated.constants import CARDS_JWKS

JWKS_PATH = CARDS_JWKS.path
MAX_DEPTH = 64  # deeper cards are refused before canonicalisation
MAX_SIGNATURES = 16


class CardSignatureError(Exception):
    """Why a card's signature does not verify; `reason` is a short machine string."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class _DeterministicES256(ECAlgorithm):
    def __init__(self) -> None:
        super().__init__(ECAlgorithm.SHA256)

    def sign(self, msg: bytes, key: Any) -> bytes:
        der = key.sign(msg, ec.ECDSA(self.hash_alg(), deterministic_signing=True))
        return der_to_raw_signature(der, key.curve)


_SIGNER = PyJWS(algorithms=[])
_SIGNER.register_algorithm("ES256", _DeterministicES256())
_SIGNER.register_algorithm("EdDSA", OKPAlgorithm())
_VERIFIER = PyJWS(algorithms=["ES256", "EdDSA"])


def _without_empties(value: Any, depth: int = 1) -> Any:
    if isinstance(value, dict | list) and depth > MAX_DEPTH:
        raise CardSignatureError("malformed", f"the card nests deeper than {MAX_DEPTH}")
    if isinstance(value, dict):
        kept = {k: c for k, v in value.items() if (c := _without_empties(v, depth + 1)) is not None}
        return kept or None
    if isinstance(value, list):
        items = [c for v in value if (c := _without_empties(v, depth + 1)) is not None]
        return items or None
    if value == "" and isinstance(value, str):
        return None
    return value


def _canonical(document: Mapping[str, Any], keep_empties: bool = False) -> bytes:
    body = {name: value for name, value in document.items() if name != "signatures"}
    try:
        if keep_empties:
            _without_empties(body)  # only for the depth bound
        else:
            body = _without_empties(body) or {}
        return bytes(rfc8785.dumps(body))
    except rfc8785.CanonicalizationError:
        raise CardSignatureError("malformed", "the card has no canonical form") from None


def payload(document: Mapping[str, Any]) -> bytes:
    """What a signature covers: the canonical card, `signatures` and empty values left out."""
    return _canonical(document)


def sign(document: Mapping[str, Any], key: CardKey, jku: str) -> dict[str, str]:
    """An AgentCardSignature over `document` (its own `signatures` are left out)."""
    header = {"alg": key.alg, "typ": "JOSE", "kid": key.kid, "jku": jku}
    token = _SIGNER.encode(payload(document), key.private_key, algorithm=key.alg,
                           headers=header)
    protected, _, signature = token.split(".")
    return {"protected": protected, "signature": signature}


def signed(document: Mapping[str, Any], key: CardKey, jku: str) -> dict[str, Any]:
    """`document` with one signature, this key's, as its `signatures`."""
    out = {name: value for name, value in document.items() if name != "signatures"}
    out["signatures"] = [sign(document, key, jku)]
    return out


@dataclass(frozen=True, slots=True)
class Verified:
    kid: str


def _b64_json(text: str) -> Any:
    padded = text + "=" * (-len(text) % 4)
    return json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))


def _algorithm_for(key: PublicKey) -> str:
    return "EdDSA" if isinstance(key, ed25519.Ed25519PublicKey) else "ES256"


def verify(document: Mapping[str, Any], keys: Sequence[PublicKey]) -> Verified:
    """Which signature over this card one of `keys` made (its header's kid), or
    CardSignatureError: `unsigned`, `bad_signature` (no signature is by these keys over this
    card: tampered, or signed by another key) or `malformed`. A key is tried whatever kid
    the header names (a pin is a key, not a label); the algorithm is the key's, never the
    header's choice alone."""
    signatures = document.get("signatures")
    if not signatures:
        raise CardSignatureError("unsigned", "the card carries no signature")
    if not isinstance(signatures, list) or len(signatures) > MAX_SIGNATURES:
        raise CardSignatureError("malformed", "the card's signatures are not a short list")
    forms: list[str] = []
    for entry in signatures:
        if not isinstance(entry, dict):
            continue
        protected, signature = entry.get("protected"), entry.get("signature")
        if not isinstance(protected, str) or not isinstance(signature, str):
            continue
        try:
            header = _b64_json(protected)
        except (ValueError, UnicodeError, binascii.Error):
            continue
        if not isinstance(header, dict):
            continue
        for key in keys:
            algorithm = _algorithm_for(key)
            if header.get("alg") != algorithm:
                continue
            if not forms:
                forms = [_b64(_canonical(document)), _b64(_canonical(document, True))]
            for form in forms:
                try:
                    _VERIFIER.decode_complete(f"{protected}.{form}.{signature}", key,
                                              algorithms=[algorithm])
                except PyJWTError:
                    continue
                kid = header.get("kid")
                return Verified(kid if isinstance(kid, str) else "")
    raise CardSignatureError("bad_signature",
                             "no signature over this card is by the key pinned for it")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")
