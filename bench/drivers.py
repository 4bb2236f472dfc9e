"""Which PostgreSQL driver for the node: asyncpg or psycopg 3 (async, with psycopg_pool)?

Measures, on a throwaway database, the three statements the hot path runs: a task read by
primary key (a ~1 KiB body), the change-counter read (two small rows) and a one-row insert
committed on its own. Each runs N times from C concurrent coroutines on uvloop, as the node
would; reported are operations per second and the client process's CPU time per operation
(what the node pays on its own core; the server's share is the same for both drivers).

    .venv/bin/python -m bench.drivers [--url postgresql://postgres@127.0.0.1:5432/postgres]
                                      [--ops N] [--concurrency C]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import psycopg
import psycopg_pool
import uvloop

BODY = json.dumps({"kind": "task", "history": [{"text": "x" * 900}]})
SETUP = (
    "CREATE TABLE tasks (id TEXT PRIMARY KEY, peer TEXT NOT NULL, body TEXT NOT NULL, "
    "version BIGINT NOT NULL DEFAULT 0)",
    "CREATE TABLE revisions (name TEXT PRIMARY KEY, value BIGINT NOT NULL)",
    "INSERT INTO revisions VALUES ('catalog', 0), ('settings', 0)",
)
GET = "SELECT body, version FROM tasks WHERE id = $1 AND peer = $2"
REVISIONS = "SELECT name, value FROM revisions"
INSERT = "INSERT INTO tasks (id, peer, body) VALUES ($1, $2, $3)"


def _psycopg(sql: str) -> str:
    return sql.replace("$1", "%s").replace("$2", "%s").replace("$3", "%s")


async def _timed(ops: int, concurrency: int, op: Callable[[int], Awaitable[Any]]
                 ) -> tuple[float, float]:
    counter = iter(range(ops))

    async def worker() -> None:
        for i in counter:
            await op(i)

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return ops / wall, cpu / ops * 1e6


async def measure_asyncpg(url: str, ops: int, concurrency: int) -> dict[str, tuple[float, float]]:
    pool = await asyncpg.create_pool(url, min_size=concurrency // 2, max_size=concurrency // 2)
    try:
        await pool.execute(INSERT, "t-read", "p", BODY)
        found = {}
        found["task read"] = await _timed(
            ops, concurrency, lambda _: pool.fetchrow(GET, "t-read", "p"))
        found["counter read"] = await _timed(ops, concurrency, lambda _: pool.fetch(REVISIONS))
        found["insert commit"] = await _timed(
            ops // 4, concurrency, lambda i: pool.execute(INSERT, f"a-{i}", "p", BODY))
        return found
    finally:
        await pool.close()


async def measure_psycopg(url: str, ops: int, concurrency: int) -> dict[str, tuple[float, float]]:
    size = concurrency // 2
    pool = psycopg_pool.AsyncConnectionPool(url, min_size=size, max_size=size, open=False,
                                            kwargs={"autocommit": True})
    await pool.open(wait=True)
    get, revisions, insert = _psycopg(GET), _psycopg(REVISIONS), _psycopg(INSERT)

    async def read(_: int) -> Any:
        async with pool.connection() as conn:
            cur = await conn.execute(get, ("t-read", "p"), prepare=True)
            return await cur.fetchone()

    async def counters(_: int) -> Any:
        async with pool.connection() as conn:
            cur = await conn.execute(revisions, prepare=True)
            return await cur.fetchall()

    async def write(i: int) -> None:
        async with pool.connection() as conn:
            await conn.execute(insert, (f"b-{i}", "p", BODY), prepare=True)

    try:
        found = {}
        found["task read"] = await _timed(ops, concurrency, read)
        found["counter read"] = await _timed(ops, concurrency, counters)
        found["insert commit"] = await _timed(ops // 4, concurrency, write)
        return found
    finally:
        await pool.close()


async def one_connection(url: str, ops: int) -> dict[str, tuple[float, float]]:
    """Both drivers on one connection, one statement at a time: the cost of the driver
    itself, without its pool's (asyncpg's pool resets a connection at every release: one
    more round trip)."""
    found: dict[str, tuple[float, float]] = {}
    a = await asyncpg.connect(url)
    p = await psycopg.AsyncConnection.connect(url, autocommit=True)
    get = _psycopg(GET)

    async def p_read(_: int) -> Any:
        cur = await p.execute(get, ("t-read", "p"), prepare=True)
        return await cur.fetchone()

    try:
        found["asyncpg"] = await _timed(ops // 4, 1, lambda _: a.fetchrow(GET, "t-read", "p"))
        found["psycopg"] = await _timed(ops // 4, 1, p_read)
    finally:
        await a.close()
        await p.close()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.drivers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres",
                        help="a server where a throwaway database may be created")
    parser.add_argument("--ops", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args(argv)
    name = f"synthorg_drivers_{secrets.token_hex(4)}"
    admin = psycopg.connect(args.url, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    url = args.url.rsplit("/", 1)[0] + f"/{name}"
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            for statement in SETUP:
                conn.execute(statement)
        single = uvloop.run(one_connection(url, args.ops))
        results = {
            "asyncpg": uvloop.run(measure_asyncpg(url, args.ops, args.concurrency)),
            "psycopg": uvloop.run(measure_psycopg(url, args.ops, args.concurrency)),
        }
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
    print(f"{args.ops} operations from {args.concurrency} coroutines (inserts: a quarter), uvloop")
    print(f"{'operation':<14} {'driver':<8} {'ops/s':>8} {'client CPU us/op':>17}")
    for op in ("task read", "counter read", "insert commit"):
        for driver, found in results.items():
            rate, cpu = found[op]
            print(f"{op:<14} {driver:<8} {rate:>8.0f} {cpu:>17.1f}")
    print("task read on one connection, no pool, one at a time:")
    for driver, (rate, cpu) in single.items():
        print(f"{'task read':<14} {driver:<8} {rate:>8.0f} {cpu:>17.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
