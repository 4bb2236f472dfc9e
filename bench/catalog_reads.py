"""What reading the catalog costs an admitted request, before and after, in one run.

    .venv/bin/python -m bench.catalog_reads [--requests N] [--rounds R] [--postgres URL]

Requests go straight into the node's ASGI app (no sockets), a tasks/get of an unknown id
through the whole pipeline, as in `bench/pipeline.py`; a plain Starlette route is the floor.
Each round runs every case once, in a fresh shuffled order; the table shows each case's
median over the rounds (microseconds per request, wall and this process's CPU) and the median
of its per-round ratio to the floor, so a busy machine shifts the cases together.

- sqlite, one lookup: the rate limit takes the peer's own limit from the record the gates
  admitted it by (`Admitted.record`);
- sqlite, second lookup: the limiter reads the catalog again for it, as it did before;
- sqlite admission only: the same two, without the rest of the pipeline (the request's
  scope, the gates and the rate-limit decision), where the lookup's share shows;
- postgresql, notified (with --postgres, a scratch database): the change counters as the
  listening connection last heard them, no query;
- postgresql, polled: the listener off, one counter query per loop turn, as before. Sequential
  requests are one loop turn each (the worst case); `x32` sends 32 at once, which share one
  query per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from bench.pipeline import PEER, SECRET, build_node, call, envelope
from synthorg.gateway.gates import Admitted
from synthorg.gateway.ratelimit import PeerRateLimiter
from synthorg.node import Node
from synthorg.store.catalog import Catalog

BODY = envelope("tasks/get", {"id": "no-such-task"}, 1)
CONCURRENT = 32
Case = Callable[[], Awaitable[None]]


class SecondLookup(PeerRateLimiter):
    """The limiter as it was: the peer's own limit read from the catalog, not handed on."""

    def __init__(self, catalog: Catalog, inner: PeerRateLimiter) -> None:
        self.__dict__.update(inner.__dict__)
        self._catalog = catalog

    def admit(self, peer: str, own: float | None) -> float | None:
        record = self._catalog.get(peer)
        return super().admit(peer, getattr(record, "rate_limit", None))


def decisions(node: Node, n: int, second_lookup: bool) -> Case:
    """The admission alone, as the gateway makes it: the request's scope, the gates, the
    rate limit (with its own limit from the verdict, or read from the catalog again)."""
    headers = {"x-a2a-peer-name": PEER, "x-api-key": SECRET}
    gate, limiter, catalog = node.gate, node._rate_limiter(), node.catalog

    async def run() -> None:
        for _ in range(n):
            await node.stores.request_started()
            result = gate.check(headers)
            assert isinstance(result, Admitted)
            own = (getattr(catalog.get(result.peer), "rate_limit", None) if second_lookup
                   else result.rate_limit)
            assert limiter.admit(result.peer, own) == 0.0
    return run


def sequential(app: Any, n: int) -> Case:
    async def run() -> None:
        for _ in range(n):
            assert await call(app, "/api/v1/a2a/", BODY) == 200
    return run


def concurrent(app: Any, n: int) -> Case:
    async def run() -> None:
        for _ in range(n // CONCURRENT):
            statuses = await asyncio.gather(
                *(call(app, "/api/v1/a2a/", BODY) for _ in range(CONCURRENT)))
            assert set(statuses) == {200}
    return run


async def measure(cases: dict[str, tuple[Case, int]], rounds: int
                  ) -> dict[str, list[tuple[float, float]]]:
    """Per case, per round: (wall us, CPU us) per request."""
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for case, _ in cases.values():  # warm up: caches, connections, the listener
        await case()
    for _ in range(rounds):
        order = list(cases)
        random.shuffle(order)
        for name in order:
            case, n = cases[name]
            wall, cpu = time.perf_counter(), time.process_time()
            await case()
            found[name].append(((time.perf_counter() - wall) / n * 1e6,
                                (time.process_time() - cpu) / n * 1e6))
    return found



async def run(n: int, rounds: int, url: str | None) -> None:
    async def plain(_: Any) -> Response:
        return Response(b'{"jsonrpc":"2.0","id":1,"result":{}}', media_type="application/json")

    floor = Starlette(routes=[Route("/api/v1/a2a/", plain, methods=["POST"])])
    cases: dict[str, tuple[Case, int]] = {"floor (plain Starlette route)": (
        sequential(floor, n), n)}
    closing: list[Node] = []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "sqlite").mkdir()
        node = build_node(Path(tmp) / "sqlite")
        closing.append(node)
        await node.recover()
        one = node.app()
        made = node._rate_limiter
        node._rate_limiter = lambda: SecondLookup(node.catalog, made())  # type: ignore[method-assign]
        two = node.app()
        cases["sqlite, one lookup (after)"] = (sequential(one, n), n)
        cases["sqlite, second lookup (before)"] = (sequential(two, n), n)
        cases["sqlite admission only, one lookup"] = (decisions(node, n, False), n)
        cases["sqlite admission only, second lookup"] = (decisions(node, n, True), n)
        if url is not None:
            pg = pg_node(Path(tmp) / "pg", url)
            closing.append(pg)
            await pg.recover()
            revisions = pg.stores.revisions  # type: ignore[attr-defined]
            listener = revisions.listener
            notified, polled = pg.app(), pg.app()

            def listening(on: bool, case: Case) -> Case:
                async def run() -> None:
                    revisions.listener = listener if on else None
                    await case()
                return run

            cases["postgresql, notified (after)"] = (
                listening(True, sequential(notified, n)), n)
            cases["postgresql, polled (before)"] = (listening(False, sequential(polled, n)), n)
            cases[f"postgresql x{CONCURRENT}, notified (after)"] = (
                listening(True, concurrent(notified, n)), n // CONCURRENT * CONCURRENT)
            cases[f"postgresql x{CONCURRENT}, polled (before)"] = (
                listening(False, concurrent(polled, n)), n // CONCURRENT * CONCURRENT)
            await pg.stores.request_started()  # opens the listener before the warm-up
            async with asyncio.timeout(30):
                await listener.until(True)
        found = await measure(cases, rounds)
        for each in closing:
            each.close()
    floor_name = next(iter(cases))
    print(f"{'case':<40} {'wall us':>8} {'CPU us':>8} {'x floor':>8}   ({rounds} rounds, "
          f"{n} requests each, medians)")
    for name, samples in found.items():
        ratios = [w / f for (w, _), (f, _) in zip(samples, found[floor_name], strict=True)]
        print(f"{name:<40} {statistics.median(w for w, _ in samples):8.1f} "
              f"{statistics.median(c for _, c in samples):8.1f} "
              f"{statistics.median(ratios):8.2f}")


def pg_node(data_dir: Path, url: str) -> Node:
    from synthorg.store.postgres.backend import PgStores
    from synthorg.store.postgres.options import PgOptions
    from synthorg.store.secretbox import SecretBox

    data_dir.mkdir()
    (data_dir / "config.yaml").write_text(f"a2a:\n  enabled: true\n  allowed_peers: [{PEER}]\n")
    stores = PgStores(PgOptions(url), SecretBox(Fernet.generate_key().decode()))
    stores.migrate()
    node = Node.build(data_dir, stores=stores)
    node.catalog.put(PEER, "http://127.0.0.1:9", "api_key", SECRET)
    return node


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--postgres", metavar="URL",
                        help="a scratch database for the PostgreSQL cases")
    args = parser.parse_args()
    asyncio.run(run(args.requests, args.rounds, args.postgres))


if __name__ == "__main__":
    main()
