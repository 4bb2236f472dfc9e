"""`make tck` and `make tck-v1`: a fresh node, the header proxy in front of it (its URL is the
card's url, via `a2a.public_url`), and an official A2A conformance kit run against the proxy.

    python -m conformance.run_tck --tck-dir ../shared/a2a-tck/0.3.x \\
        --tck-python .tck/venv/bin/python --categories mandatory,capabilities
    python -m conformance.run_tck --dialect 1.0 --tck-dir ../shared/a2a-tck/1.0-dev \\
        --tck-python .venv-tck1/bin/python [--level must] [--transport jsonrpc|grpc]
        [-- pytest args]

The 0.3 kit runs category by category (its `run_tck.py`) against a node whose default agent
waits for input, so the kit can continue and cancel its tasks. The 1.0 kit (its pytest suite,
at one requirement level) runs against a `conformance` agent, which answers as the kit's
messageId prefixes ask, and reads the default card. Everything the run writes
lives under .tck/ (git-ignored; 1.0: .tck/v1, its reports in .tck/v1/reports); the node and
the proxy are stopped at the end, whatever happens. The exit status is the kit's worst. Each
run rewrites its kit's rows of the table in docs/conformance.md (`conformance/report.py`).
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

from conformance import report
from tests.support.node import ROOT, NodeProcess, cli

WORK = ROOT / ".tck"
PEER = "tck"
DIALECTS = ("0.3", "1.0")
CONFIG_0_3 = """\
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
CONFIG_1_0 = """\
a2a:
  enabled: true
  node_name: tck-node
  public_url: {public_url}
  allowed_peers: [{peer}]
agents:
  - {{id: conformance, name: Conformance, executor: {{kind: conformance}}}}
"""
NODE_HOST = "127.0.0.2"  # the node's address when the kit runs over gRPC (see main)
_SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|error|errors|xfailed|xpassed)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m conformance.run_tck")
    parser.add_argument("--dialect", choices=DIALECTS, default="0.3")
    parser.add_argument("--tck-dir", type=Path, required=True)
    parser.add_argument("--tck-python", type=Path, required=True)
    parser.add_argument("--categories", default="mandatory,capabilities", help="0.3 only")
    parser.add_argument("--level", default="must", help="1.0 only")
    parser.add_argument("--transport", default="jsonrpc", help="1.0 only")
    parser.add_argument("pytest_args", nargs="*", help="1.0 only: passed on to pytest")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    v1 = args.dialect == "1.0"
    work = WORK / "v1" if v1 else WORK
    if v1 and not (args.tck_dir / "tests" / "compatibility").is_dir():
        print(f"no A2A 1.0 conformance kit at {args.tck_dir}", file=sys.stderr)
        return 2
    data = work / "data"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    key = secrets.token_urlsafe(24)
    key_file = work / "peer.key"
    key_file.write_text(key)
    proxy_port = free_port()
    public_url = f"http://127.0.0.1:{proxy_port}"
    config = (CONFIG_1_0 if v1 else CONFIG_0_3).format(public_url=public_url, peer=PEER)
    # Over gRPC, the kit calls the card's GRPC interface, `127.0.0.1:<grpc_port>` (the public
    # URL's host): a gRPC proxy listens there and the node on NODE_HOST, the same port.
    grpc = v1 and "grpc" in args.transport.split(",")
    grpc_port = free_port() if grpc else 0
    if grpc:
        config += f"server: {{grpc_port: {grpc_port}}}\n"
    node = NodeProcess(data, config, env={"SYNTHORG_BACKEND_HOST": NODE_HOST} if grpc else None)
    cli(data, "peers", "add", PEER, "--endpoint", "http://127.0.0.1:9", stdin=key)
    with node:
        target = f"http://{NODE_HOST}:{node.port}" if grpc else node.url
        command = [sys.executable, "-m", "conformance.proxy", "--listen", str(proxy_port),
                   "--target", target, "--peer", PEER, "--key-file", str(key_file)]
        # No --card-version: the 1.0 kit reads the default card, as a 1.0 client that sends
        # no A2A-Version with its card fetch does (the default card carries 1.0's members).
        proxy = subprocess.Popen(command, cwd=ROOT)
        grpc_proxy = subprocess.Popen(
            [sys.executable, "-m", "conformance.grpc_proxy", "--listen",
             f"127.0.0.1:{grpc_port}", "--target", f"{NODE_HOST}:{grpc_port}",
             "--peer", PEER, "--key-file", str(key_file)], cwd=ROOT,
        ) if grpc else None
        try:
            _wait_for_port(proxy_port)
            if grpc_proxy is not None:
                _wait_for_port(grpc_port)
            if v1:
                return _run_v1(args, work, public_url)
            runs = [_run_0_3(args, category, f"{public_url}/api/v1/a2a/")
                    for category in args.categories.split(",")]
            report.update(report.from_pytest_output(report.KIT_0_3, [out for _, out in runs]))
            return max(code for code, _ in runs)
        finally:
            for process in (proxy, grpc_proxy):
                if process is not None:
                    process.terminate()
                    process.wait(timeout=10)


def _wait_for_port(port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:  # poll until the proxy listens
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the proxy did not listen on {port}")


def _kit_env(tck_python: Path) -> dict[str, str]:
    venv_bin = tck_python.absolute().parent  # not resolved: the venv is the point
    # The kit runs `pytest` from PATH: its own venv's, not whatever else is installed.
    return {**os.environ, "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}",
            "VIRTUAL_ENV": str(venv_bin.parent), "PYTHONDONTWRITEBYTECODE": "1"}


def _run_0_3(args: argparse.Namespace, category: str, sut_url: str) -> tuple[int, str]:
    python = args.tck_python.absolute()
    run = subprocess.run(
        [str(python), "run_tck.py", "--sut-url", sut_url, "--category", category],
        cwd=args.tck_dir, capture_output=True, text=True, check=False,
        env=_kit_env(args.tck_python),
    )
    (WORK / f"{category}.log").write_text(run.stdout + run.stderr)
    counts = {kind: int(n) for n, kind in _SUMMARY.findall(run.stdout)}
    print(f"tck {category}: exit {run.returncode}, {counts} (log: .tck/{category}.log)")
    return run.returncode, run.stdout


def _run_v1(args: argparse.Namespace, work: Path, sut_host: str) -> int:
    reports = work / "reports"
    shutil.rmtree(reports, ignore_errors=True)
    reports.mkdir(parents=True)
    command = [
        str(args.tck_python.absolute()), "-m", "pytest", "tests/compatibility/",
        f"--sut-host={sut_host}", f"--transport={args.transport}", "-m", args.level,
        "--tb=short", "-q", "-p", "no:cacheprovider",
        f"--compatibility-report={reports / 'compatibility'}",
        f"--junitxml={reports / 'junitreport.xml'}",
        *args.pytest_args,
    ]
    env = _kit_env(args.tck_python)
    code = subprocess.run(command, cwd=args.tck_dir, env=env, check=False).returncode
    junit = reports / "junitreport.xml"
    # docs/conformance.md records the JSON-RPC run; another transport's is in its reports.
    if junit.exists() and args.transport == "jsonrpc":
        report.update(report.from_junit(report.KIT_1_0, junit))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
