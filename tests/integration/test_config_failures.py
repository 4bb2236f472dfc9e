"""DESIGN §7: a bad config.yaml stops the node with one clear line; a missing one means defaults.

Each bad file is tried by running `python -m synthorg.api` as an operator would; the node
must exit non-zero before it listens, naming the file, the key and the problem.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.integration.helpers import JSON, RPC_PATH, envelope
from tests.integration.live import LiveNode
from tests.support.node import ROOT

LEAKED_VALUE = "jwt-secret-LEAKCHECK-7d21"
RUN_TIMEOUT = 30


@dataclass(frozen=True)
class BadConfig:
    yaml: str
    key: str  # what the error line must name
    problem: str  # and what it must say about it


BAD_CONFIGS = {
    "unknown-a2a-key": BadConfig(
        "a2a:\n  enabled: true\n  bogus_key: 1\n", "a2a.bogus_key", "unknown key"
    ),
    "peer-url": BadConfig(
        "a2a:\n  enabled: true\n  peer_url: http://127.0.0.1:9\n",
        "a2a.peer_url",
        "connection catalog",
    ),
    "peer-jwt-secret": BadConfig(
        f"a2a:\n  peer_jwt_secret: {LEAKED_VALUE}\n", "a2a.peer_jwt_secret", "connection catalog"
    ),
    "bad-allowed-peer": BadConfig(
        "a2a:\n  allowed_peers: [peer-a, 'Bad Peer!']\n",
        "a2a.allowed_peers[1]",
        "not a valid peer name",
    ),
    "yaml-syntax": BadConfig("a2a:\n  enabled: [true\n", "line", "not valid YAML"),
    "limit-below-minimum": BadConfig(
        "a2a:\n  max_request_body_bytes: 10\n", "a2a.max_request_body_bytes", "1024"
    ),
}


def run_node(data_dir: Path) -> subprocess.CompletedProcess[str]:
    """`python -m synthorg.api` as an operator runs it (port 0, in case it does start)."""
    env = {
        **os.environ,
        "SYNTHORG_DATA_DIR": str(data_dir),
        "SYNTHORG_BACKEND_HOST": "127.0.0.1",
        "SYNTHORG_BACKEND_PORT": "0",
    }
    return subprocess.run(
        [sys.executable, "-m", "synthorg.api"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


@pytest.mark.parametrize("case", list(BAD_CONFIGS))
def test_invalid_config_exits_nonzero_with_one_line_naming_file_key_and_problem(
    tmp_path: Path, case: str
) -> None:
    bad = BAD_CONFIGS[case]
    config_path = tmp_path / "config.yaml"
    config_path.write_text(bad.yaml)
    run = run_node(tmp_path)
    assert run.returncode != 0, run.stderr
    lines = error_lines(run.stderr)
    assert len(lines) == 1, run.stderr
    assert str(config_path) in lines[0]
    assert bad.key in lines[0]
    assert bad.problem in lines[0]
    assert "Traceback" not in run.stderr
    assert LEAKED_VALUE not in run.stderr
    assert "a2a.node.started" not in run.stderr


@pytest.fixture(scope="module")
def default_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    with LiveNode(tmp_path_factory.mktemp("defaults")) as node:
        yield node


def test_missing_config_starts_and_says_it_uses_defaults(default_node: LiveNode) -> None:
    line = default_node.wait_for_line("starting with defaults")
    assert str(default_node.data_dir / "config.yaml") in line
    started = default_node.wait_for_event("a2a.node.started")
    assert started["a2a_enabled"] is False


def test_missing_config_leaves_the_gateway_disabled(default_node: LiveNode) -> None:
    response = httpx.post(
        default_node.url + RPC_PATH,
        json=envelope("tasks/get", {"id": "x"}),
        headers={"Content-Type": JSON},
    )
    assert response.status_code == 404
