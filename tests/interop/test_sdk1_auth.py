"""The official `a2a-sdk` 1.x client with its own `AuthInterceptor` and one stored credential
(no hand-built headers) is admitted by a live node: the card's security requirements list
ApiKey and Bearer alone, and the secret alone names the peer. A wrong secret is refused."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.node import NodeProcess, cli

ROOT = Path(__file__).resolve().parents[2]
SDK1_PYTHON = ROOT / ".venv-sdk1" / "bin" / "python"
DRIVER = Path(__file__).with_name("sdk1_auth.py")

pytestmark = pytest.mark.skipif(
    not SDK1_PYTHON.exists(),
    reason="the a2a-sdk 1.x venv is missing: run `make sdk1-venv` (make test builds it)",
)

PEER, KEY = "sdk-auth-peer", "sdk-auth-peer-secret-6e0f"
CONFIG = f"""\
a2a: {{enabled: true, node_name: node-auth, allowed_peers: [{PEER}]}}
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
"""


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    data_dir: Path = tmp_path_factory.mktemp("sdk1-auth")
    with NodeProcess(data_dir, CONFIG) as running:
        cli(data_dir, "peers", "add", PEER, "--endpoint", "http://127.0.0.1:9", stdin=KEY)
        yield running


def drive(node: NodeProcess, scheme: str, secret: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SDK1_PYTHON), str(DRIVER), node.url, scheme, secret],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("scheme", ["ApiKey", "Bearer"])
def test_the_sdks_auth_interceptor_with_one_stored_credential_is_admitted(
    node: NodeProcess, scheme: str
) -> None:
    done = drive(node, scheme, KEY)
    assert done.returncode == 0, done.stderr[-3000:]
    assert '"TASK_STATE_COMPLETED"' in done.stdout


def test_a_wrong_stored_credential_is_refused(node: NodeProcess) -> None:
    done = drive(node, "ApiKey", KEY + "-wrong")
    assert done.returncode != 0 and "401" in done.stderr
