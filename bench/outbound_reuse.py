"""Time per outbound call, this tree against another, in one run: a node's delegator reading a
delegated task (`tasks/get`) from a live peer, call after call.

node-b is a real node process on 127.0.0.1 (this tree's, the same for every round), serving
its echo agent, over http, and over https with client certificates when `--https` (the test
CA of examples/make_test_ca.py; node-b's record of node-a then pins node-a's certificate, and
node-a's of node-b pins node-b's: scheme mtls). node-a is built in a child process whose
`synthorg` comes from the tree it is given (`--baseline`: a checkout to compare with, e.g.
`git worktree add --detach /tmp/base HEAD~1`), started as a node starts serving
(`start_background`), linked to node-b; it delegates one task to node-b and then refreshes it
`--requests` times, one call at a time, through its delegator (`Delegator.refresh`: a catalog
read, the client, the call, the record's update). The rounds alternate the trees in a fresh
order each round; medians are reported, with this tree's ratio to the baseline's in the same
round.

    .venv/bin/python -m bench.outbound_reuse [--baseline DIR] [--requests N] [--rounds R]
        [--https]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
LINK = "bench-outbound-link-secret-7d2e"


def _tls_yaml(certs: Path, name: str) -> str:
    return ("server:\n  tls:\n"
            f"    cert_file: {certs / name}.pem\n    key_file: {certs / name}.key\n"
            f"    ca_file: {certs / 'ca.pem'}\n")


async def _measure(peer_url: str, n: int, certs: Path | None) -> dict[str, float]:
    """One child's calls on this tree (imported from sys.path[0])."""
    from synthorg.generated.models import V1TextPart
    from synthorg.node import Node
    from synthorg.observability import log

    log.configure_logging("warning")
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        (data_dir / "config.yaml").write_text(
            "a2a:\n  enabled: true\n  node_name: node-a\n  allowed_peers: [node-b]\n"
            + (_tls_yaml(certs, "node-a") if certs is not None else "")
            + "agents:\n  - {id: echo, name: Echo, executor: {kind: echo}}\n"
        )
        node = Node.build(data_dir)
        if certs is not None:
            from synthorg.tls.pins import pin_of_pem

            pin = pin_of_pem((certs / "node-b.pem").read_bytes())
            node.catalog.put("node-b", peer_url, "mtls", pin)
        else:
            node.catalog.put("node-b", peer_url, "api_key", LINK)
        await node.start_background()  # as the node does when it starts serving
        try:
            delegator = node.delegator
            text = [V1TextPart(text="hello")]
            record = await delegator.delegate("node-b", text, agent_id="echo")
            for _ in range(50):  # warm up
                await delegator.refresh(record.id)
            start, cpu = time.perf_counter(), time.thread_time()
            for _ in range(n):
                await delegator.refresh(record.id)
            wall = (time.perf_counter() - start) / n * 1e6
            used = (time.thread_time() - cpu) / n * 1e6
        finally:
            await node.stop_background()
            node.close()
    return {"tasks/get wall": wall, "tasks/get cpu": used}


def child(peer_url: str, n: int, certs: Path | None) -> None:
    print(json.dumps(asyncio.run(_measure(peer_url, n, certs))))


def _run_child(tree: Path, peer_url: str, n: int, certs: Path | None) -> dict[str, float]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--tree", str(tree),
               "--peer", peer_url, "--requests", str(n)]
    if certs is not None:
        command += ["--certs", str(certs)]
    env = {k: v for k, v in os.environ.items() if k != "SYNTHORG_DATABASE_URL"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the child on {tree} failed:\n{done.stderr[-3000:]}")
    last: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return last


def _peer(workdir: Path, certs: Path | None) -> Any:
    """node-b, started: a live node allowing node-a, with its echo agent."""
    from tests.support.catalog import add_peer
    from tests.support.node import NodeProcess

    data_dir = workdir / "node-b"
    data_dir.mkdir()
    config = ("a2a:\n  enabled: true\n  node_name: node-b\n  allowed_peers: [node-a]\n"
              + (_tls_yaml(certs, "node-b") if certs is not None else "")
              + "agents:\n  - {id: echo, name: Echo, executor: {kind: echo}}\n")
    node = NodeProcess(data_dir, config)
    if certs is not None:
        from synthorg.tls.pins import pin_of_pem

        pin = pin_of_pem((certs / "node-a.pem").read_bytes())
        add_peer(data_dir, "node-a", pin, "https://127.0.0.1:9", scheme="mtls")
    else:
        add_peer(data_dir, "node-a", LINK)
    return node.start()


def _certs(workdir: Path) -> Path:
    from examples.make_test_ca import issue, make_ca, write_node

    certs = workdir / "certs"
    certs.mkdir()
    ca = make_ca()
    (certs / "ca.pem").write_bytes(ca.pem)
    for name in ("node-a", "node-b"):
        write_node(certs, name, issue(ca, name))
    return certs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, help="the tree to compare with")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--https", action="store_true",
                        help="node-b serves https; the link is mtls (certificate pins)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--peer", help=argparse.SUPPRESS)
    parser.add_argument("--certs", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.peer, args.requests, args.certs)
        return
    from bench.rounds import TreeRounds, shuffled_rounds, trees  # the parent's only

    measured = trees(args.baseline, HERE)
    results = TreeRounds(list(measured))
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        certs = _certs(workdir) if args.https else None
        peer = _peer(workdir, certs)
        url = peer.url.replace("http://", "https://") if certs is not None else peer.url
        try:
            for order in shuffled_rounds(list(measured.items()), args.rounds):
                results.add({name: _run_child(tree, url, args.requests, certs)
                             for name, tree in order})
        finally:
            peer.stop()
    scheme = "https, mtls" if args.https else "http"
    print(f"median of {args.rounds} rounds of {args.requests} calls ({scheme}); µs per call")
    header = f"{'case':<20}" + "".join(f"{name:>10}" for name in measured)
    print(header + (f"{'this/base':>11}" if results.ratios else ""))
    for case in results.samples["this"]:
        row = f"{case:<20}" + "".join(
            f"{statistics.median(results.samples[name][case]):>10.1f}" for name in measured)
        if case in results.ratios:
            row += f"{statistics.median(results.ratios[case]):>11.3f}"
        print(row)


if __name__ == "__main__":
    # `synthorg` comes from the tree measured (the child's --tree), not bench/.
    script_dir = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if p != script_dir]
    tree = sys.argv[sys.argv.index("--tree") + 1] if "--tree" in sys.argv else str(HERE)
    sys.path.insert(0, tree)
    main()
