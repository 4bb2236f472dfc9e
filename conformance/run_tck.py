"""`make tck`: a fresh node, the header proxy in front of it (its URL is the card's url, via
`a2a.public_url`), and the official A2A TCK run against the proxy, category by category.

    python -m conformance.run_tck --tck-dir ../shared/a2a-tck/0.3.x \\
        --tck-python .tck/venv/bin/python --categories mandatory,capabilities

Everything it writes lives under .tck/ (git-ignored); the node and the proxy are stopped at
the end, whatever happens. The exit status is the TCK's worst.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.support.node import ROOT, NodeProcess, cli

WORK = ROOT / ".tck"
PEER = "tck"
CONFIG = """\
a2a:
  enabled: true
  node_name: tck-node
  public_url: {public_url}
  allowed_peers: [{peer}]
agents:
  # The kit continues and cancels the tasks it creates: the default agent waits for input.
  - {{id: parker, name: Parker, executor: {{kind: park}}}}
  - id: writer
    name: Writer
    description: Works briefly, reports progress and writes its answer in chunks.
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {{seconds: 0.5, chunks: 2}}
"""
_SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|error|errors|xfailed|xpassed)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.run_tck")
    parser.add_argument("--tck-dir", type=Path, required=True)
    parser.add_argument("--tck-python", type=Path, required=True)
    parser.add_argument("--categories", default="mandatory,capabilities")
    args = parser.parse_args()
    data = WORK / "data"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    key = secrets.token_urlsafe(24)
    key_file = WORK / "peer.key"
    key_file.write_text(key)
    proxy_port = free_port()
    public_url = f"http://127.0.0.1:{proxy_port}"
    node = NodeProcess(data, CONFIG.format(public_url=public_url, peer=PEER))
    cli(data, "peers", "add", PEER, "--endpoint", "http://127.0.0.1:9", stdin=key)
    worst = 0
    with node:
        proxy = subprocess.Popen(
            [sys.executable, "-m", "conformance.proxy", "--listen", str(proxy_port),
             "--target", node.url, "--peer", PEER, "--key-file", str(key_file)],
            cwd=ROOT,
        )
        try:
            _wait_for_port(proxy_port)
            for category in args.categories.split(","):
                worst = max(worst, _run(args, category, f"{public_url}/api/v1/a2a/"))
        finally:
            proxy.terminate()
            proxy.wait(timeout=10)
    return worst


def _wait_for_port(port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:  # poll until the proxy listens
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the proxy did not listen on {port}")


def _run(args: argparse.Namespace, category: str, sut_url: str) -> int:
    venv_bin = args.tck_python.absolute().parent  # not resolved: the venv is the point
    # The kit runs `pytest` from PATH: its own venv's, not whatever else is installed.
    env = {**os.environ, "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}",
           "VIRTUAL_ENV": str(venv_bin.parent)}
    run = subprocess.run(
        [str(venv_bin / "python"), "run_tck.py", "--sut-url", sut_url, "--category", category],
        cwd=args.tck_dir, capture_output=True, text=True, check=False, env=env,
    )
    (WORK / f"{category}.log").write_text(run.stdout + run.stderr)
    counts = {kind: int(n) for n, kind in _SUMMARY.findall(run.stdout)}
    print(f"tck {category}: exit {run.returncode}, {counts} (log: .tck/{category}.log)")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
