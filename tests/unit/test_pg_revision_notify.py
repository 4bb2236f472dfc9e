"""Catalog and settings changes reach another replica by notification (PostgreSQL).

Two store bundles on one throwaway database stand for two replicas: the writer changes the
catalog or a setting (as a replica's admin API or the CLI does); the reader serves requests
(`request_started`, then the gate's lookup), as the gateway does. While the reader's listening
connection is up, its requests read no counters at all; when that connection is killed
(`pg_terminate_backend`), its requests read the counters again and still see every change,
until the listener is back.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import asyncpg
from cryptography.fernet import Fernet

from synthorg.store.postgres.backend import PgStores
from synthorg.store.postgres.listener import APPLICATION_NAME, RevisionListener
from synthorg.store.postgres.options import PgOptions
from synthorg.store.postgres.revisions import CATALOG, SETTINGS
from synthorg.store.secretbox import SecretBox
from tests.support.tcp_proxy import TcpProxy

BOUND = 30.0  # seconds: a wait that takes longer has failed (never a pace)


@asynccontextmanager
async def replicas(url: str, reader_url: str | None = None
                   ) -> AsyncIterator[tuple[PgStores, PgStores]]:
    key = Fernet.generate_key().decode()
    reader = PgStores(PgOptions(reader_url or url, statement_timeout=1.0), SecretBox(key))
    writer = PgStores(PgOptions(url), SecretBox(key))
    writer.migrate()
    try:
        yield reader, writer
    finally:
        reader.close()
        writer.close()


def listener(stores: PgStores) -> RevisionListener:
    assert stores.revisions.listener is not None
    return stores.revisions.listener


async def listening(stores: PgStores) -> None:
    await stores.request_started()  # the first request opens the listening connection
    async with asyncio.timeout(BOUND):
        await listener(stores).until(True)


def announcements(stores: PgStores) -> Callable[[str], asyncio.Queue[int]]:
    """Per counter name, the revisions announced to the reader from now on."""
    queues: dict[str, asyncio.Queue[int]] = {CATALOG: asyncio.Queue(), SETTINGS: asyncio.Queue()}
    listener(stores).watch(lambda name, revision: queues[name].put_nowait(revision))
    return queues.__getitem__


async def announced(queue: asyncio.Queue[int]) -> int:
    async with asyncio.timeout(BOUND):
        return await queue.get()


async def announced_up_to(queue: asyncio.Queue[int], revision: int) -> None:
    """Every announcement up to `revision` (an upsert fires both its INSERT and its UPDATE
    statement triggers: two revisions, two announcements)."""
    while await announced(queue) < revision:
        pass


async def secret_seen(stores: PgStores, peer: str) -> str | None:
    """One request on the reader: the counters, then the gate's lookup."""
    await stores.request_started()
    record = stores.catalog.get(peer)
    return None if record is None else record.secret


def test_a_change_arrives_by_notification_and_requests_read_no_counters(
    postgres_database: str,
) -> None:
    async def scenario() -> None:
        async with replicas(postgres_database) as (reader, writer):
            writer.catalog.put("peer-a", "http://a.example", "api_key", "secret-a-0123456789")
            await listening(reader)
            queue = announcements(reader)
            reads = reader.revisions.reads
            assert await secret_seen(reader, "peer-a") == "secret-a-0123456789"

            # Revoked through the other replica: announced with the counter it moved to.
            writer.catalog.remove("peer-a")
            revision = await announced(queue(CATALOG))
            assert revision == writer.revisions.read_blocking()[CATALOG]
            assert await secret_seen(reader, "peer-a") is None

            writer.settings.write("a2a", "max_message_parts", 3)
            await announced_up_to(queue(SETTINGS), writer.revisions.read_blocking()[SETTINGS])
            await reader.request_started()
            assert reader.settings.read_all("a2a") == {"max_message_parts": 3}

            # A rolled-back change is never announced (they arrive in commit order).
            conn = await asyncpg.connect(postgres_database)
            try:
                rolled_back = conn.transaction()
                await rolled_back.start()
                await conn.execute("DELETE FROM settings")
                await rolled_back.rollback()
            finally:
                await conn.close()
            writer.catalog.put("peer-b", "http://b.example", "api_key", "secret-b-0123456789")
            await announced_up_to(queue(CATALOG), writer.revisions.read_blocking()[CATALOG])
            assert queue(SETTINGS).empty()
            assert await secret_seen(reader, "peer-b") == "secret-b-0123456789"
            assert reader.revisions.reads == reads  # not one counter read while listening

    asyncio.run(scenario())


def test_a_killed_listener_falls_back_to_reading_and_comes_back(
    postgres_database: str,
) -> None:
    async def scenario() -> None:
        async with replicas(postgres_database) as (reader, writer):
            writer.catalog.put("peer-a", "http://a.example", "api_key", "secret-a-0123456789")
            await listening(reader)
            assert await secret_seen(reader, "peer-a") == "secret-a-0123456789"

            admin = await asyncpg.connect(postgres_database)
            try:
                killed = await admin.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND application_name = $1",
                    APPLICATION_NAME)
            finally:
                await admin.close()
            assert killed == 1
            async with asyncio.timeout(BOUND):
                await listener(reader).until(False)

            # Nothing is announced now: each request reads the counters, and sees the change.
            reads = reader.revisions.reads
            writer.catalog.remove("peer-a")
            assert await secret_seen(reader, "peer-a") is None
            assert reader.revisions.reads > reads

            # The listener is back by itself, and what changed meanwhile is not missed.
            writer.catalog.put("peer-a", "http://a.example", "api_key", "secret-a-new-456789")
            async with asyncio.timeout(BOUND):
                await listener(reader).until(True)
            queue = announcements(reader)
            reads = reader.revisions.reads
            assert await secret_seen(reader, "peer-a") == "secret-a-new-456789"
            writer.catalog.remove("peer-a")
            await announced_up_to(queue(CATALOG), writer.revisions.read_blocking()[CATALOG])
            assert await secret_seen(reader, "peer-a") is None
            assert reader.revisions.reads == reads

    asyncio.run(scenario())


def test_a_listener_gone_silent_is_dropped_by_its_heartbeat(postgres_database: str) -> None:
    """The reader reaches the database through a relay that stops passing bytes but keeps
    the connections open (a silent network): no announcement, no closed connection. The
    heartbeat gives up on it within its bound, so the reader is not left serving what it last
    heard; once the network is back it listens again and hears the next change."""
    parts = urlsplit(postgres_database)

    async def scenario(relay: TcpProxy) -> None:
        netloc = f"{parts.username}@127.0.0.1:{relay.port}" if parts.username \
            else f"127.0.0.1:{relay.port}"
        through = parts._replace(netloc=netloc).geturl()
        async with replicas(postgres_database, through) as (reader, writer):
            writer.catalog.put("peer-a", "http://a.example", "api_key", "secret-a-0123456789")
            await listening(reader)
            assert await secret_seen(reader, "peer-a") == "secret-a-0123456789"
            relay.hold()
            async with asyncio.timeout(BOUND):
                await listener(reader).until(False)
            relay.cut()  # the network comes back: the held connections are gone
            relay.restore()
            async with asyncio.timeout(BOUND):
                await listener(reader).until(True)
            queue = announcements(reader)
            writer.catalog.remove("peer-a")
            await announced_up_to(queue(CATALOG), writer.revisions.read_blocking()[CATALOG])
            assert await secret_seen(reader, "peer-a") is None

    with TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5432) as relay:
        asyncio.run(scenario(relay))
