"""Console sessions in the node's store, on both backends: two store bundles on one store
stand for two worker processes (or replicas), each with its own `Sessions`. A session made
through one is live through the other, its sign-out ends it on both, its expiry slides, and
the store holds neither the id nor anything that leads back to it. Without the store, the
console signs nobody in."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from cryptography.fernet import Fernet

from synthorg.admin.token import AdminToken
from synthorg.console.admin_calls import AdminCalls
from synthorg.console.pages import build_console
from synthorg.console.sessions import COOKIE, EXTEND_STEP, MAX_ID_LENGTH, Session, Sessions
from synthorg.store.backend import Stores
from synthorg.store.postgres.backend import PgStores
from synthorg.store.postgres.options import PgOptions
from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.backend import SqliteStores
from tests.conftest import BACKENDS

T = TypeVar("T")
LIFETIME = 30 * 60.0
START = 1_900_000_000.0


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


class Processes:
    """Store bundles on one store, each as one process holds it, sharing one clock."""

    def __init__(self, data_dir: Path, url: str | None) -> None:
        self.data_dir, self.url = data_dir, url
        self.clock = Clock()
        self._opened: list[Stores] = []

    def stores(self) -> Stores:
        stores: Stores
        if self.url is None:
            stores = SqliteStores(self.data_dir)
        else:
            stores = PgStores(PgOptions(self.url), SecretBox(Fernet.generate_key().decode()))
            stores.migrate()
        self._opened.append(stores)
        return stores

    def sessions(self) -> Sessions:
        return Sessions(self.stores().console_sessions, LIFETIME, self.clock)

    async def rows(self) -> list[tuple[Any, ...]]:
        """Every stored session, as the store holds it."""
        stores = self._opened[0]
        sql = "SELECT key, created_at, expires_at FROM console_sessions ORDER BY created_at"
        if isinstance(stores, PgStores):
            return [tuple(row) for row in await stores.db.fetch(sql)]
        assert isinstance(stores, SqliteStores)
        return stores.db.query(sql)

    def close(self) -> None:
        for stores in self._opened:
            stores.close()


@pytest.fixture(params=BACKENDS)
def processes(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Processes]:
    url = request.getfixturevalue("postgres_database") if request.param == "postgresql" else None
    opened = Processes(tmp_path / "data", url)
    yield opened
    opened.close()


def same(a: Session | None, b: Session) -> bool:
    return a is not None and (a.id, a.csrf) == (b.id, b.csrf)


def test_a_session_made_by_one_process_is_live_on_another_until_signed_out(
    processes: Processes,
) -> None:
    one, two = processes.sessions(), processes.sessions()

    async def scenario() -> None:
        made = await one.open()
        assert made.expires == START + LIFETIME
        seen = await two.get(made.id)
        assert same(seen, made) and seen is not None
        assert seen.csrf_matches(made.csrf)  # the token one process's form carried
        other = await one.open()
        assert other.csrf != made.csrf and not seen.csrf_matches(other.csrf)
        assert not seen.csrf_matches(None) and not seen.csrf_matches(made.csrf + "x")
        await two.close(made.id)  # sign-out on the other process
        assert await one.get(made.id) is None and await two.get(made.id) is None
        assert same(await one.get(other.id), other)  # only that session ended

    run(scenario())


def test_the_store_holds_a_digest_of_the_id_and_no_csrf_token(processes: Processes) -> None:
    sessions = processes.sessions()

    async def scenario() -> None:
        made = await sessions.open()
        rows = await processes.rows()
        assert rows == [(hashlib.sha256(made.id.encode()).hexdigest(), START, START + LIFETIME)]
        stored = repr(rows)
        assert made.id not in stored and made.csrf not in stored

    run(scenario())


def test_unknown_empty_and_overlong_ids_find_no_session(processes: Processes) -> None:
    sessions = processes.sessions()

    async def scenario() -> None:
        made = await sessions.open()
        for presented in (None, "", "x" * 43, made.id + "x", made.id[:-1],
                          "a" * (MAX_ID_LENGTH + 1)):
            assert await sessions.get(presented) is None, presented
        await sessions.close("never-made")  # closing an unknown id changes nothing
        assert same(await sessions.get(made.id), made)

    run(scenario())


def test_the_expiry_slides_and_is_written_at_most_once_a_step(processes: Processes) -> None:
    one, two = processes.sessions(), processes.sessions()
    clock = processes.clock

    async def scenario() -> None:
        made = await one.open()
        clock.now = START + EXTEND_STEP / 2  # within a step: the expiry stays where it is
        seen = await two.get(made.id)
        assert seen is not None and seen.expires == START + LIFETIME
        assert (await processes.rows())[0][2] == START + LIFETIME
        clock.now = START + EXTEND_STEP  # a step later: moved, and stored for every process
        seen = await two.get(made.id)
        assert seen is not None and seen.expires == clock.now + LIFETIME
        assert (await processes.rows())[0][2] == clock.now + LIFETIME
        clock.now += LIFETIME - 1  # still live: its last request moved it on
        assert same(await one.get(made.id), made)
        clock.now += LIFETIME  # idle for a whole lifetime: gone on both
        assert await one.get(made.id) is None and await two.get(made.id) is None

    run(scenario())


def test_making_a_session_sweeps_the_expired_ones(processes: Processes) -> None:
    sessions = processes.sessions()
    clock = processes.clock

    async def scenario() -> None:
        old = await sessions.open()
        clock.now += LIFETIME / 2
        kept = await sessions.open()
        clock.now = START + LIFETIME  # the first has just expired, the second has not
        fresh = await sessions.open()
        keys = [row[0] for row in await processes.rows()]
        digest = [hashlib.sha256(s.id.encode()).hexdigest() for s in (old, kept, fresh)]
        assert keys == digest[1:]

    run(scenario())


def test_the_store_keeps_at_most_its_bound_dropping_the_least_recently_used(
    processes: Processes,
) -> None:
    store = processes.stores().console_sessions

    async def scenario() -> None:
        # Five sessions made in turn, the first then used last (its expiry the latest).
        for i in range(5):
            await store.add(f"k{i}", START + i, START + LIFETIME + i, keep=3)
            if i == 0:
                await store.extend("k0", START + LIFETIME + 10)
        keys = sorted(row[0] for row in await processes.rows())
        assert keys == ["k0", "k3", "k4"]
        assert await store.expiry("k1", START) is None
        assert await store.expiry("k0", START) == START + LIFETIME + 10

    run(scenario())


def test_the_console_answers_503_and_signs_nobody_in_while_the_store_is_unreachable() -> None:
    # A PostgreSQL store at a closed port: every session read and write fails to reach it.
    stores = PgStores(PgOptions("postgresql://postgres@127.0.0.1:9/none", connect_timeout=2.0),
                      SecretBox(Fernet.generate_key().decode()))
    token = "console-admin-token-for-the-test"
    console = build_console(AdminCalls({}), AdminToken.from_value(token.encode(), "env"),
                            stores.console_sessions, 30)

    async def scenario() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=console)
        async with httpx.AsyncClient(transport=transport, base_url="http://node") as client:
            client.cookies.set(COOKIE, "a" * 43, path="/console")
            page = await client.get("/console")  # the session cannot be looked up
            client.cookies.clear()
            signin = await client.post("/console/signin", data={"token": token})  # nor made
            return [page, signin]

    try:
        answers = run(scenario())
    finally:
        stores.close()
    for answer in answers:
        assert answer.status_code == 503 and "set-cookie" not in answer.headers
        assert "store cannot be reached" in answer.text
        assert answer.headers["cache-control"] == "no-store"
