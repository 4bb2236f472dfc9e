"""Card signatures with the official `a2a-sdk` 1.x (its own venv, driven as a subprocess by
`sdk1_signing.py`), both ways: the SDK's verifier accepts the 1.0 cards our node serves, with
the key it finds at the signature's `jku`; our verifier accepts a card the SDK's signer made,
and refuses it once tampered."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from synthorg.cards.keys import KEYS_ENV, public_key_from_jwk
from synthorg.cards.signing import CardSignatureError, verify
from tests.support.node import NodeProcess, cli

ROOT = Path(__file__).resolve().parents[2]
SDK1_PYTHON = ROOT / ".venv-sdk1" / "bin" / "python"
DRIVER = Path(__file__).with_name("sdk1_signing.py")

pytestmark = pytest.mark.skipif(
    not SDK1_PYTHON.exists(),
    reason="the a2a-sdk 1.x venv is missing: run `make sdk1-venv` (make test builds it)",
)

CONFIG = """\
company: {name: Acme, description: "Research on demand, \u00e9t\u00e9 compris."}
a2a: {enabled: true, node_name: node-v}
agents:
  - id: echo
    name: Echo
    executor: {kind: echo}
    skills:
      - {id: public-skill, name: Public, tags: [open], examples: ["say \\"hi\\""]}
"""


def driver(*args: str) -> dict[str, Any]:
    done = subprocess.run([str(SDK1_PYTHON), str(DRIVER), *args], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module", params=["ES256", "EdDSA"])
def node(request: pytest.FixtureRequest,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    data_dir: Path = tmp_path_factory.mktemp("sdk1-signing")
    key_set = cli(data_dir, "keys", "generate", "--alg", request.param).stdout
    with NodeProcess(data_dir, CONFIG, env={KEYS_ENV: key_set}) as running:
        yield running


@pytest.mark.parametrize("path", ["/.well-known/agent-card.json",
                                  "/.well-known/agents/echo/agent-card.json"])
def test_the_sdk_verifies_our_signed_cards(node: NodeProcess, path: str) -> None:
    with node.client() as client:
        jwks = client.get("/.well-known/jwks.json").json()
    assert driver("verify", node.url + path) == {"kid": jwks["keys"][0]["kid"]}


def test_we_verify_a_card_the_sdk_signed(node: NodeProcess, tmp_path: Path) -> None:
    with node.client() as client:
        ours = client.get("/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}).json()
    ours.pop("signatures")
    source = tmp_path / "card.json"
    source.write_text(json.dumps(ours))
    signed = driver("sign", str(source))
    key = public_key_from_jwk(signed["jwk"])
    assert verify(signed["card"], [key]).kid == "sdk-key-1"
    with pytest.raises(CardSignatureError) as refused:
        verify({**signed["card"], "description": "tampered"}, [key])
    assert refused.value.reason == "bad_signature"
