"""`make tck-v1`: the A2A 1.0 conformance kit (its `1.0-dev` tree, run where it lies, never
copied) against a live node, JSON-RPC transport, MUST level, through the header proxy.

    python -m tests.tck.run_v1 [--kit DIR] [--level must] [-- pytest args]

The node runs on a fresh data dir under build/tck-v1 with a `conformance` agent (states by
messageId prefix, the kit's scenario signal) and the kit's peer in its catalog; its card url
is the proxy's. The kit runs with `.venv-tck1` (make builds it); its reports go to
build/tck-v1/reports. The exit status is the kit's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.node import ROOT, NodeProcess, cli
from tests.tck.proxy import HeaderProxy

# shared/ sits beside the checkout (../shared), or beside the worktrees' folder.
KITS = [base / "shared" / "a2a-tck" / "1.0-dev" for base in (ROOT.parent, ROOT.parent.parent)]
DEFAULT_KIT = next((kit for kit in KITS if kit.is_dir()), KITS[0])
WORK = ROOT / "build" / "tck-v1"
TCK_PYTHON = ROOT / ".venv-tck1" / "bin" / "python"
PEER, KEY = "tck-peer", "tck-peer-link-secret-4e7b1c"
CONFIG = """\
a2a:
  enabled: true
  node_name: tck-node
  public_url: {public_url}
  allowed_peers: [{peer}]
agents:
  - {{id: conformance, name: Conformance, executor: {{kind: conformance}}}}
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.tck.run_v1")
    kit_dir = os.environ.get("TCK_V1_DIR", str(DEFAULT_KIT))
    parser.add_argument("--kit", type=Path, default=Path(kit_dir))
    parser.add_argument("--level", default="must")
    parser.add_argument("--transport", default="jsonrpc")
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args(argv)
    kit: Path = args.kit.resolve()
    if not (kit / "tests" / "compatibility").is_dir():
        print(f"no conformance kit at {kit}", file=sys.stderr)
        return 2
    shutil.rmtree(WORK, ignore_errors=True)
    (WORK / "reports").mkdir(parents=True)
    proxy = HeaderProxy(PEER, KEY, card_version="1.0")
    config = CONFIG.format(public_url=proxy.url, peer=PEER)
    with NodeProcess(WORK / "data", config) as node:
        cli(node.data_dir, "peers", "add", PEER, "--endpoint", "http://127.0.0.1:9", stdin=KEY)
        proxy.start(node.url)
        try:
            reports = WORK / "reports"
            command = [
                str(TCK_PYTHON), "-m", "pytest", "tests/compatibility/",
                f"--sut-host={proxy.url}", f"--transport={args.transport}", "-m", args.level,
                "--tb=short", "-q", "-p", "no:cacheprovider",
                f"--compatibility-report={reports / 'compatibility'}",
                f"--junitxml={reports / 'junitreport.xml'}",
                *args.pytest_args,
            ]
            env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
            return subprocess.run(command, cwd=kit, env=env, check=False).returncode
        finally:
            proxy.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
