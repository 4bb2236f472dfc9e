"""CPU and wall time per durable `message/send`, this tree against another, in one run.

Each measurement runs in a child process whose `synthorg` comes from the tree it is given
(`--baseline`: a checkout of the code to compare with, e.g. `git worktree add --detach
/tmp/base main`), so two versions of the send path are measured side by side; the rounds
alternate the trees in a fresh order each round and the medians are reported, with each
tree's ratio to the baseline's in the same round.

Calls go straight into the node's ASGI app (no sockets): `message/send` to the echo agent,
a fresh `messageId` each time (a new task: one write), through the whole pipeline.

- sequential: one send at a time (µs per send: wall, and the loop thread's CPU);
- concurrent: `--in-flight` sends at once, so SQLite's group commit batches their writes
  (wall µs per send, loop thread's CPU µs per send);
- replay: a send repeated with its `messageId` and content (the idempotent answer).

With `--postgres` each child also runs the cases on a fresh database of the server at
127.0.0.1:5432 (dropped after).

    .venv/bin/python -m bench.send_path --baseline DIR [--requests N] [--rounds R]
        [--in-flight K] [--postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def _send_body(i: int, message_id: str) -> bytes:
    message = {
        "kind": "message",
        "messageId": message_id,
        "role": "user",
        "parts": [{"kind": "text", "text": "hello"}],
        "metadata": {"trace": "bench", "n": 1},
    }
    return json.dumps(
        {"jsonrpc": "2.0", "id": i, "method": "message/send", "params": {"message": message}}
    ).encode()


async def _measure(backend: str, n: int, in_flight: int) -> dict[str, float]:
    """One child's cases on this tree (imported from sys.path[0])."""
    from bench.pipeline import build_node, call  # the tree's own
    from synthorg.observability import log

    log.configure_logging("warning")
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        node = build_node(Path(tmp))
        app = node.app()
        await node.recover()
        run_id = secrets.token_hex(4)
        path = "/api/v1/a2a/"

        async def one(i: int) -> int:
            return await call(app, path, _send_body(i, f"m-{run_id}-{i}"))

        async def timed(label: str, cases: int,
                        step: Callable[[int], Awaitable[None]]) -> None:
            start, cpu = time.perf_counter(), time.thread_time()
            await step(cases)
            results[f"{label} wall"] = (time.perf_counter() - start) / cases * 1e6
            results[f"{label} cpu"] = (time.thread_time() - cpu) / cases * 1e6

        for i in range(300):  # warm up
            assert await one(10**8 + i) == 200

        async def sequential(cases: int) -> None:
            for i in range(cases):
                await one(i)

        async def concurrent(cases: int) -> None:
            base = 10**7
            for start in range(0, cases, in_flight):
                await asyncio.gather(*(one(base + i) for i in range(start, start + in_flight)))

        replayed = _send_body(0, f"m-{run_id}-0")

        async def replay(cases: int) -> None:
            for _ in range(cases):
                await call(app, path, replayed)

        await timed(f"{backend} sequential", n, sequential)
        await timed(f"{backend} concurrent", n - n % in_flight or in_flight, concurrent)
        await timed(f"{backend} replay", n, replay)
        close = getattr(node, "aclose", None)
        if close is not None:
            await close()
        node.close()
    return results


async def _admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(ADMIN_URL, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def child(n: int, in_flight: int, postgres: bool) -> None:
    results = asyncio.run(_measure("sqlite", n, in_flight))
    if postgres:
        name = f"bench_send_path_{secrets.token_hex(4)}"
        asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
        os.environ["SYNTHORG_DATABASE_URL"] = ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
        from cryptography.fernet import Fernet

        os.environ.setdefault("SYNTHORG_SECRET_KEY", Fernet.generate_key().decode())
        try:
            results.update(asyncio.run(_measure("postgres", n, in_flight)))
        finally:
            os.environ.pop("SYNTHORG_DATABASE_URL")
            asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    print(json.dumps(results))


def _run_child(tree: Path, n: int, in_flight: int, postgres: bool) -> dict[str, float]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--tree", str(tree),
               "--requests", str(n), "--in-flight", str(in_flight)]
    if postgres:
        command.append("--postgres")
    env = {k: v for k, v in os.environ.items() if k != "SYNTHORG_DATABASE_URL"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the child on {tree} failed:\n{done.stderr[-3000:]}")
    last: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", type=Path, help="the tree to compare with")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--in-flight", type=int, default=32)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.requests, args.in_flight, args.postgres)
        return
    trees: dict[str, Path] = {"this": HERE}
    if args.baseline is not None:
        trees = {"baseline": args.baseline.resolve(), "this": HERE}
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
    ratios: dict[str, list[float]] = {}
    for round_ in range(args.rounds):
        order = list(trees.items())
        random.Random(round_).shuffle(order)  # no tree always runs first
        this_round = {
            name: _run_child(tree, args.requests, args.in_flight, args.postgres)
            for name, tree in order
        }
        for name, results in this_round.items():
            for case, value in results.items():
                samples[name].setdefault(case, []).append(value)
        if "baseline" in this_round:
            for case, value in this_round["this"].items():
                ratios.setdefault(case, []).append(value / this_round["baseline"][case])
    print(f"median of {args.rounds} rounds of {args.requests} sends "
          f"({args.in_flight} in flight when concurrent); µs per send")
    header = f"{'case':<28}" + "".join(f"{name:>10}" for name in trees)
    print(header + (f"{'this/base':>11}" if ratios else ""))
    for case in samples["this"]:
        row = f"{case:<28}" + "".join(
            f"{statistics.median(samples[name][case]):>10.1f}" for name in trees
        )
        if ratios:
            row += f"{statistics.median(ratios[case]):>11.3f}"
        print(row)


if __name__ == "__main__":
    # `bench` and `synthorg` come from the tree measured (the child's --tree), not bench/.
    script_dir = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if p != script_dir]
    tree = sys.argv[sys.argv.index("--tree") + 1] if "--tree" in sys.argv else str(HERE)
    sys.path.insert(0, tree)
    main()
