"""One credential is enough: on a live node, the peer's secret alone (X-API-Key, or
Authorization: Bearer) names the peer; with X-A2A-Peer-Name too, the name must match. Every
other gate rule stands: an unknown key and a wrong one are refused alike, a peer off the
allowlist is refused, a bearer-only record does not take X-API-Key, two different values
in the two headers name no one, and the admin token never passes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from synthorg.admin.token import TOKEN_ENV
from tests.support.node import NodeProcess, cli

ADMIN_TOKEN = "one-credential-admin-token-93be1"
KEYS = {"alpha": "alpha-link-secret-0c41", "beta": "beta-bearer-secret-77d2",
        "outsider": "outsider-link-secret-5aa9"}
CONFIG = """\
a2a:
  enabled: true
  node_name: node-one
  allowed_peers: [alpha, beta]
agents:
  - {id: echo, name: Echo, executor: {kind: echo}}
"""
GET = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "no-such-task"}}


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    data_dir: Path = tmp_path_factory.mktemp("one-credential")
    with NodeProcess(data_dir, CONFIG, env={TOKEN_ENV: ADMIN_TOKEN}) as running:
        for name, scheme in (("alpha", "api_key"), ("beta", "bearer"), ("outsider", "api_key")):
            cli(data_dir, "peers", "add", name, "--endpoint", "http://127.0.0.1:9",
                "--scheme", scheme, stdin=KEYS[name])
        yield running


def call(node: NodeProcess, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(node.rpc_url, json=GET, headers=headers)


@pytest.mark.parametrize("headers", [
    {"X-API-Key": KEYS["alpha"]},
    {"Authorization": f"Bearer {KEYS['alpha']}"},
    {"Authorization": f"Bearer {KEYS['beta']}"},
    {"X-API-Key": KEYS["alpha"], "X-A2A-Peer-Name": "alpha"},
    {"X-API-Key": KEYS["alpha"], "Authorization": f"Bearer {KEYS['alpha']}"},
])
def test_the_credential_alone_admits_its_peer(node: NodeProcess, headers: dict[str, str]
                                              ) -> None:
    answer = call(node, headers)
    assert answer.status_code == 200
    assert answer.json()["error"]["code"] == -32001  # admitted: the task is simply unknown


@pytest.mark.parametrize(("headers", "status"), [
    ({"X-API-Key": "nobody-has-this-secret"}, 401),
    ({"X-API-Key": KEYS["alpha"][:-1] + "x"}, 401),
    ({"X-API-Key": KEYS["beta"]}, 401),  # beta's record takes Authorization: Bearer only
    ({"X-API-Key": KEYS["alpha"], "Authorization": f"Bearer {KEYS['beta']}"}, 401),
    ({"X-API-Key": KEYS["alpha"], "X-A2A-Peer-Name": "beta"}, 401),  # the name must match
    ({"X-API-Key": KEYS["outsider"]}, 403),  # in the catalog, not on the allowlist
    ({"Authorization": f"Bearer {ADMIN_TOKEN}"}, 401),
    ({}, 401),
])
def test_every_other_gate_rule_stands(node: NodeProcess, headers: dict[str, str],
                                      status: int) -> None:
    assert call(node, headers).status_code == status


def test_an_unknown_key_and_a_wrong_one_get_the_same_refusal(node: NodeProcess) -> None:
    unknown = call(node, {"X-API-Key": "nobody-has-this-secret"})
    wrong = call(node, {"X-API-Key": KEYS["alpha"][:-1] + "x"})
    assert (unknown.status_code, unknown.content) == (wrong.status_code, wrong.content)


def test_a_replaced_key_names_no_one(node: NodeProcess) -> None:
    cli(node.data_dir, "peers", "add", "alpha", "--endpoint", "http://127.0.0.1:9",
        stdin="alpha-rotated-secret-11fe")
    try:
        assert call(node, {"X-API-Key": KEYS["alpha"]}).status_code == 401
        assert call(node, {"X-API-Key": "alpha-rotated-secret-11fe"}).status_code == 200
    finally:
        cli(node.data_dir, "peers", "add", "alpha", "--endpoint", "http://127.0.0.1:9",
            stdin=KEYS["alpha"])


def test_the_card_says_one_credential_is_enough(node: NodeProcess) -> None:
    card = httpx.get(node.url + "/.well-known/agent-card.json").json()
    assert {"ApiKey": []} in card["security"] and {"Bearer": []} in card["security"]
    v1 = httpx.get(node.url + "/.well-known/agent-card.json",
                   headers={"A2A-Version": "1.0"}).json()
    assert {"schemes": {"ApiKey": {"list": []}}} in v1["securityRequirements"]
