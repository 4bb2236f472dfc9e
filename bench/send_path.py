"""CPU and wall time per durable `message/send`, this tree against another, in one run.

Each measurement runs in a child process whose `synthorg` comes from the tree it is given
(`--baseline`: a checkout of the code to compare with, e.g. `git worktree add --detach
/tmp/base main`), so two versions of the send path are measured side by side; the rounds
alternate the trees in a fresh order each round and the medians are reported, with each
tree's ratio to the baseline's in the same round.

Calls go straight into the node's ASGI app (no sockets): `message/send` to the echo agent
(pure: a new task is one write), a fresh `messageId` each time, through the whole pipeline.

- sequential: one send at a time (µs per send: wall, and the loop thread's CPU);
- concurrent: `--in-flight` sends at once, so SQLite's group commit batches their writes
  (wall µs per send, loop thread's CPU µs per send);
- replay: a send repeated with its `messageId` and content (the idempotent answer);
- python agent: one send at a time to an operator's agent (`kind: python`, not pure) that
  answers at once, so its task is created, run in a job of its own and settled;
- `--savepoints` (this tree only, after the rest): concurrent sends, and the task store's
  creates alone, with a savepoint per job in every batch against savepoints only on a
  retried batch, alternating in one process.

With `--postgres` each child also runs the cases on a fresh database of the server at
127.0.0.1:5432 (dropped after).

    .venv/bin/python -m bench.send_path --baseline DIR [--requests N] [--rounds R]
        [--in-flight K] [--postgres] [--savepoints]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


# An operator's agent (`kind: python`) that answers at once: its tasks take the path of
# every agent that is not pure (created, run in a job of its own, settled).
QUICK_AGENT = """\
from synthorg.generated.constants import TASK_STATE_COMPLETED
from synthorg.tasks.executors import Outcome


class Quick:
    pure = False

    async def run(self, task, message, progress):
        return Outcome(TASK_STATE_COMPLETED, message_text="done")

    async def cancel(self, task):
        return None


def factory(options):
    return Quick()
"""


def _build_node(data_dir: Path) -> Any:
    from bench.pipeline import PEER, SECRET
    from synthorg.node import Node

    (data_dir / "bench_quick_agent.py").write_text(QUICK_AGENT)
    (data_dir / "config.yaml").write_text(
        f"a2a:\n  enabled: true\n  allowed_peers: [{PEER}]\n"
        "agents:\n"
        "  - {id: echo, name: Echo, executor: {kind: echo}}\n"
        "  - {id: quick, name: Quick, executor: {kind: python, "
        "entrypoint: 'bench_quick_agent:factory'}}\n"
    )
    node = Node.build(data_dir)
    node.catalog.put(PEER, "http://127.0.0.1:9", "api_key", SECRET)
    return node


def _send_body(i: int, message_id: str, agent: str = "echo") -> bytes:
    message = {
        "kind": "message",
        "messageId": message_id,
        "role": "user",
        "parts": [{"kind": "text", "text": "hello"}],
        "metadata": {"trace": "bench", "n": 1, "agentId": agent},
    }
    return json.dumps(
        {"jsonrpc": "2.0", "id": i, "method": "message/send", "params": {"message": message}}
    ).encode()


async def _measure(
    backend: str, n: int, in_flight: int, savepoints: bool = False
) -> dict[str, float]:
    """One child's cases on this tree (imported from sys.path[0])."""
    from bench.pipeline import call  # the tree's own
    from synthorg.observability import log

    log.configure_logging("warning")
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        node = _build_node(Path(tmp))
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

        sent = [10**7]  # the next fresh message number of the concurrent sends

        async def concurrent(cases: int) -> None:
            for _ in range(0, cases, in_flight):
                first, sent[0] = sent[0], sent[0] + in_flight
                await asyncio.gather(*(one(first + i) for i in range(in_flight)))

        replayed = _send_body(0, f"m-{run_id}-0")

        async def replay(cases: int) -> None:
            for _ in range(cases):
                await call(app, path, replayed)

        async def quick(cases: int) -> None:
            for i in range(cases):
                await call(app, path, _send_body(i, f"q-{run_id}-{i}", "quick"))

        await timed(f"{backend} sequential", n, sequential)
        await timed(f"{backend} concurrent", n - n % in_flight or in_flight, concurrent)
        await timed(f"{backend} replay", n, replay)
        await timed(f"{backend} python agent", n, quick)
        if savepoints and backend == "sqlite":  # last: what it leaves behind skews the rest
            await _savepoints_ab(results, concurrent, n, in_flight)
        close = getattr(node, "aclose", None)
        if close is not None:
            await close()
        node.close()
    return results


async def _savepoints_ab(
    results: dict[str, float], concurrent: Callable[[int], Awaitable[None]], n: int,
    in_flight: int,
) -> None:
    """Concurrent sends with a savepoint per job in every batch (as before batches ran
    without them until a retry), against the batches as they run now, alternating in
    blocks in this one process; the loop thread's CPU µs per send, medians over blocks."""
    import inspect

    from synthorg.store.sqlite.database import Database

    run_batch = Database._run
    if "careful" not in inspect.signature(run_batch).parameters:
        return  # a tree where every batch of several jobs takes savepoints

    def always_careful(self: Database, batch: Any, careful: bool = False) -> bool:
        return run_batch(self, batch, True)

    block = max(in_flight, (n // 10) - (n // 10) % in_flight)
    samples: dict[str, list[float]] = {"savepoint per job": [], "savepoints on retry": []}
    for i in range(20):
        for label in sorted(samples, reverse=i % 2 == 1):
            chosen = always_careful if label == "savepoint per job" else run_batch
            setattr(Database, "_run", chosen)  # noqa: B010 (only inside this bench)
            cpu = time.thread_time()
            await concurrent(block)
            samples[label].append((time.thread_time() - cpu) / block * 1e6)
    setattr(Database, "_run", run_batch)  # noqa: B010
    for label, values in samples.items():
        results[f"sqlite conc. {label} cpu"] = statistics.median(values)
    await _store_savepoints_ab(results, always_careful, in_flight)


async def _store_savepoints_ab(
    results: dict[str, float], always_careful: Callable[..., bool], in_flight: int
) -> None:
    """The same A/B on the task store alone (batches of `in_flight` task creates), where
    the rest of a send does not drown the difference."""
    from synthorg.generated.constants import TASK_STATE_COMPLETED
    from synthorg.generated.models import V1Task
    from synthorg.store.sqlite.database import Database, open_database
    from synthorg.store.sqlite.tasks import SqliteTaskStore
    from synthorg.store.tasks import MessageKey

    run_batch = Database._run
    task = V1Task.model_validate({
        "id": "t", "contextId": "c",
        "status": {"state": TASK_STATE_COMPLETED, "timestamp": "2026-01-01T00:00:00.000Z"},
        "history": [{"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "hello"}]}],
    })
    with tempfile.TemporaryDirectory() as tmp:
        db = open_database(Path(tmp))
        store = SqliteTaskStore(db)
        made = [0]

        async def batches(count: int) -> float:
            cpu = time.thread_time()
            for _ in range(count):
                first, made[0] = made[0], made[0] + in_flight
                await asyncio.gather(*(
                    store.create("p", MessageKey(f"m-{i}", "d"),
                                 task.model_copy(update={"id": f"t-{i}"}))
                    for i in range(first, first + in_flight)
                ))
            return (time.thread_time() - cpu) / (count * in_flight) * 1e6

        samples: dict[str, list[float]] = {"savepoint per job": [], "savepoints on retry": []}
        for i in range(40):
            for label in sorted(samples, reverse=i % 2 == 1):
                chosen = always_careful if label == "savepoint per job" else run_batch
                setattr(Database, "_run", chosen)  # noqa: B010
                samples[label].append(await batches(20))
        setattr(Database, "_run", run_batch)  # noqa: B010
        db.close()
    for label, values in samples.items():
        results[f"store create, {label} cpu"] = statistics.median(values)


async def _admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(ADMIN_URL, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def child(n: int, in_flight: int, postgres: bool, savepoints: bool) -> None:
    results = asyncio.run(_measure("sqlite", n, in_flight, savepoints))
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


def _run_child(
    tree: Path, n: int, in_flight: int, postgres: bool, savepoints: bool
) -> dict[str, float]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--tree", str(tree),
               "--requests", str(n), "--in-flight", str(in_flight)]
    if postgres:
        command.append("--postgres")
    if savepoints:
        command.append("--savepoints")
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
    parser.add_argument("--savepoints", action="store_true",
                        help="also the savepoints A/B, in this tree only (it skews the "
                        "cases after it, so compare trees without it)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.requests, args.in_flight, args.postgres, args.savepoints)
        return
    from bench.rounds import TreeRounds, shuffled_rounds, trees  # the parent's only

    measured = trees(args.baseline, HERE)
    results = TreeRounds(list(measured))
    for order in shuffled_rounds(list(measured.items()), args.rounds):  # no tree always first
        results.add({
            name: _run_child(tree, args.requests, args.in_flight, args.postgres,
                             args.savepoints and name == "this")
            for name, tree in order
        })
    samples, ratios = results.samples, results.ratios
    print(f"median of {args.rounds} rounds of {args.requests} sends "
          f"({args.in_flight} in flight when concurrent); µs per send")
    header = f"{'case':<38}" + "".join(f"{name:>10}" for name in measured)
    print(header + (f"{'this/base':>11}" if ratios else ""))
    for case in samples["this"]:
        row = f"{case:<38}" + "".join(
            f"{statistics.median(samples[name][case]):>10.1f}" if case in samples[name]
            else f"{'-':>10}"
            for name in measured
        )
        if case in ratios:
            row += f"{statistics.median(ratios[case]):>11.3f}"
        print(row)


if __name__ == "__main__":
    # `bench` and `synthorg` come from the tree measured (the child's --tree), not bench/.
    script_dir = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if p != script_dir]
    tree = sys.argv[sys.argv.index("--tree") + 1] if "--tree" in sys.argv else str(HERE)
    sys.path.insert(0, tree)
    main()
