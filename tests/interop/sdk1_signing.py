"""Drives the official `a2a-sdk` 1.x card signer and verifier (its own virtualenv, `make
sdk1-venv`) for `test_card_signatures_sdk1.py`, which runs this file with that venv's python.

    python sdk1_signing.py verify CARD_URL   fetch a card (A2A-Version: 1.0) and verify it with
                                             the SDK's verifier, the key found at the
                                             signature's jku; prints {"kid": ...}
    python sdk1_signing.py sign FILE         sign the 1.0 card in FILE with a fresh P-256 key
                                             by the SDK's signer; prints {"card", "jwk"}
"""

from __future__ import annotations

import json
import sys
from typing import Any

import httpx
from google.protobuf.json_format import MessageToDict, ParseDict


def verify(card_url: str) -> dict[str, Any]:
    from a2a.types import AgentCard
    from a2a.utils.signing import create_signature_verifier
    from jwt import PyJWK

    document = httpx.get(card_url, headers={"A2A-Version": "1.0"}).json()
    card = ParseDict(document, AgentCard())
    used: dict[str, Any] = {}

    def key_provider(kid: str | None, jku: str | None) -> PyJWK:
        assert jku is not None and jku.startswith(card_url.split("/.well-known/")[0])
        for jwk in httpx.get(jku).json()["keys"]:
            if jwk["kid"] == kid:
                used["kid"] = kid
                return PyJWK(jwk)
        raise LookupError(kid)

    create_signature_verifier(key_provider, ["ES256", "EdDSA"])(card)
    return used


def sign(path: str) -> dict[str, Any]:
    from a2a.types import AgentCard
    from a2a.utils.signing import create_agent_card_signer
    from cryptography.hazmat.primitives.asymmetric import ec
    from jwt.algorithms import ECAlgorithm

    private = ec.generate_private_key(ec.SECP256R1())
    jwk = json.loads(ECAlgorithm.to_jwk(private.public_key()))
    with open(path, encoding="utf-8") as source:
        card = ParseDict(json.load(source), AgentCard())
    signer = create_agent_card_signer(
        private, {"alg": "ES256", "kid": "sdk-key-1", "jku": None, "typ": "JOSE"}
    )
    return {"card": MessageToDict(signer(card)), "jwk": jwk}


def main(argv: list[str]) -> int:
    if argv[:1] == ["verify"] and len(argv) == 2:
        print(json.dumps(verify(argv[1])))
        return 0
    if argv[:1] == ["sign"] and len(argv) == 2:
        print(json.dumps(sign(argv[1])))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
