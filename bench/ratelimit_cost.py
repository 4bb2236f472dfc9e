"""What a per-peer rate-limit decision costs the event loop, by mechanism, in one run.

    .venv/bin/python -m bench.ratelimit_cost [--n N] [--redis HOST:PORT] [--postgres URL]

- local: this node's `PeerRateLimiter.admit` with the bucket in memory (a lone process);
- redis: one EVALSHA of a token-bucket script per request on an asyncio connection (the
  least any Redis client could do: a raw RESP round trip, no client library overhead);
- sqlite: one UPSERT of a bucket row per request in its own transaction, as a token bucket
  in the node's own database would need;
- leased, sqlite / postgresql: what the node does with several processes: the limiter takes
  tokens from the shared bucket (`SqliteRateBuckets`, `PgRateBuckets`) in leases, at
  several peer rates (the lease is a slice of the rate), and one round trip per decision
  (a lease of one token: the most a slow peer's requests can cost each).

Prints microseconds per decision (wall time, sequential, so a round trip's wait counts: a
request waits for it). Compare with a tasks/get's time per request in `make bench`.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sqlite3
import tempfile
import time
from pathlib import Path

from synthorg.gateway.ratelimit import PeerRateLimiter, Take, lease_size
from synthorg.store.ratebuckets import Lease
from synthorg.store.sqlite.ratebuckets import SqliteRateBuckets

_BUCKET = """
local b = redis.call('HMGET', KEYS[1], 't', 'ts')
local rate, cap, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local t = tonumber(b[1]) or cap
local ts = tonumber(b[2]) or now
t = math.min(cap, t + (now - ts) * rate)
local ok = 0
if t >= 1 then t = t - 1; ok = 1 end
redis.call('HSET', KEYS[1], 't', t, 'ts', now)
redis.call('EXPIRE', KEYS[1], 60)
return ok
"""


def _resp(*parts: str) -> bytes:
    out = [f"*{len(parts)}\r\n".encode()]
    for part in parts:
        data = part.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def local(n: int) -> float:
    limiter = PeerRateLimiter(lambda: 1e6, lambda: 1_000_000, 1)
    started = time.perf_counter()
    for _ in range(n):
        limiter.admit("peer-a", None)
    return (time.perf_counter() - started) / n * 1e6


async def redis(n: int, host: str, port: int) -> float:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(_resp("SCRIPT", "LOAD", _BUCKET))
    await writer.drain()
    sha = (await reader.readuntil(b"\r\n"))[1:].decode()  # bulk length line
    sha = (await reader.readuntil(b"\r\n")).decode().strip()
    started = time.perf_counter()
    for _ in range(n):
        writer.write(_resp("EVALSHA", sha, "1", "rl:peer-a", "1000000", "1000000",
                           repr(time.time())))
        await writer.drain()
        await reader.readuntil(b"\r\n")
    elapsed = time.perf_counter() - started
    writer.close()
    return elapsed / n * 1e6


def sqlite(n: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(Path(tmp) / "b.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("CREATE TABLE buckets (peer TEXT PRIMARY KEY, tokens REAL, ts REAL)")
        started = time.perf_counter()
        for _ in range(n):
            now = time.time()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO buckets VALUES ('peer-a', 1e6, ?) ON CONFLICT (peer) DO UPDATE "
                "SET tokens = min(1e6, tokens + (? - ts) * 1e6) - 1, ts = ?", (now, now, now))
            conn.execute("COMMIT")
        elapsed = time.perf_counter() - started
        conn.close()
    return elapsed / n * 1e6


async def leased(n: int, take: Take, rate: float) -> tuple[float, float]:
    """Decisions for one peer at `rate` (its burst `n`, so none is refused: each is an
    admitted request's cost) through the limiter with the shared bucket, as the gateway
    makes them."""
    limiter = PeerRateLimiter(lambda: rate, lambda: n, 2, shared=take)
    peer = f"peer-{rate:g}-{secrets.token_hex(4)}"  # a fresh bucket, even in a kept database
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        if limiter.admit(peer, None) is None:
            await limiter.take(peer, None)
    return ((time.perf_counter() - started) / n * 1e6, (time.process_time() - cpu) / n * 1e6)


async def leased_rows(n: int, name: str, take: Take) -> None:
    """Back to back, as fast as the loop goes: far faster than the rate, so a lease is spent
    before the next (taken in the background) arrives, and most round trips are waited for:
    the worst case. Wall time per decision, and this process's CPU time (what the event loop
    spends; a round trip's wait leaves the loop to other requests)."""
    for rate in (1e6, 1000.0, 100.0):
        wall, cpu = await leased(n, take, rate)
        print(f"leased {name:<10} {wall:8.2f} us/decision, {cpu:6.2f} us CPU "
              f"(rate {rate:g}/s, lease {lease_size(rate, rate)})")

    async def one_each(peer: str, rate: float, capacity: float, want: int) -> Lease:
        return await take(peer, rate, capacity, 1)

    wall, cpu = await leased(n // 4, one_each, 1e6)
    print(f"leased {name:<10} {wall:8.2f} us/decision, {cpu:6.2f} us CPU (a round trip each)")


async def postgres(n: int, url: str) -> None:
    from synthorg.store.postgres.database import PgDatabase
    from synthorg.store.postgres.options import PgOptions
    from synthorg.store.postgres.ratebuckets import PgRateBuckets
    from synthorg.store.postgres.schema import migrate

    db = PgDatabase(PgOptions(url))
    try:
        await db.run(migrate)
        await leased_rows(n, "postgresql", PgRateBuckets(db).take)
    finally:
        await db.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--redis", default="127.0.0.1:6379")
    parser.add_argument("--postgres", metavar="URL",
                        help="a database to make the rate_buckets table in (e.g. a scratch one)")
    args = parser.parse_args()
    host, port = args.redis.rsplit(":", 1)
    print(f"local   {local(args.n):8.2f} us/decision")
    try:
        print(f"redis   {asyncio.run(redis(args.n, host, int(port))):8.2f} us/decision")
    except OSError as exc:
        print(f"redis   unavailable ({exc})")
    print(f"sqlite  {sqlite(args.n // 4):8.2f} us/decision")
    with tempfile.TemporaryDirectory() as tmp:
        buckets = SqliteRateBuckets(Path(tmp))
        asyncio.run(leased_rows(args.n, "sqlite", buckets.take))
        buckets.close()
    if args.postgres:
        try:
            asyncio.run(postgres(args.n, args.postgres))
        except OSError as exc:
            print(f"leased postgresql unavailable ({exc})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
