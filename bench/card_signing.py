"""What signing a card costs, and the measurement behind the libraries chosen
(docs/card-signatures.md): RFC 8785 canonicalisation of a real card by `rfc8785` and by `jcs`
(when installed), then JWS sign and verify with PyJWT for ES256 and EdDSA.

    python bench/card_signing.py [--agents N]

A card is signed once per (base URL, document) and then served from memory, so this is a
start-up and discovery cost, not a per-request one.
"""

from __future__ import annotations

import argparse
import importlib
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import rfc8785

from synthorg.cards.keys import new_key
from synthorg.cards.projection import company_card
from synthorg.cards.publisher import document_of
from synthorg.cards.signing import sign, verify
from synthorg.config.company import load_config
from synthorg.generated.constants import A2A_VERSION_1_0


def card(agents: int) -> dict[str, Any]:
    lines = ["company: {name: Acme, description: Bench.}", "a2a: {enabled: true}", "agents:"]
    for n in range(agents):
        lines += [f"  - id: agent-{n}", f"    name: Agent {n}", "    executor: {kind: echo}",
                  "    skills:",
                  f"      - {{id: skill-{n}, name: Skill {n}, tags: [t{n}, \u00e9t\u00e9]}}"]
    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / "config.yaml").write_text("\n".join(lines) + "\n")
        config = load_config(Path(directory))
    return document_of(company_card(config, "https://acme.example", "1.0"), A2A_VERSION_1_0)


def per_call(fn: Callable[[], object]) -> float:
    runs, total = timeit.Timer(fn).autorange()
    return total / runs * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=50)
    document = card(parser.parse_args().agents)
    print(f"card: {len(rfc8785.dumps(document))} canonical bytes")
    print(f"rfc8785.dumps      {per_call(lambda: rfc8785.dumps(document)):9.1f} us")
    try:
        jcs: Any = importlib.import_module("jcs")
        print(f"jcs.canonicalize   {per_call(lambda: jcs.canonicalize(document)):9.1f} us")
        assert jcs.canonicalize(document) == rfc8785.dumps(document)
    except ImportError:
        print("jcs                (not installed)")
    for alg in ("ES256", "EdDSA"):
        key = new_key(alg)
        public = [key.private_key.public_key()]
        signed = {**document, "signatures": [sign(document, key, "https://acme.example/j")]}
        signing = per_call(lambda k=key: sign(document, k, "j"))  # type: ignore[misc]
        checking = per_call(lambda s=signed, p=public: verify(s, p))  # type: ignore[misc]
        print(f"{alg:6} sign        {signing:9.1f} us")
        print(f"{alg:6} verify      {checking:9.1f} us")


if __name__ == "__main__":
    main()
