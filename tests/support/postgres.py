"""Throwaway PostgreSQL databases for the tests, on the server at 127.0.0.1:5432.

Each user creates a database of its own (a random name) and drops it after (`WITH (FORCE)`,
so connections a killed node left behind do not keep it). When the server cannot be reached:
in CI (`CI=true`) the test fails, saying so; elsewhere it is skipped with a plain reason, and
pytest's summary (`-rs`) lists what was skipped.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from urllib.parse import urlsplit

import asyncpg
import pytest

SERVER_ENV = "SYNTHORG_TEST_POSTGRES_URL"
DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
UNREACHABLE = "PostgreSQL not reachable at {where} ({why})"


def server_url() -> str:
    return os.environ.get(SERVER_ENV) or DEFAULT_SERVER


def _where(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or 5432}"


def database_url(name: str) -> str:
    return urlsplit(server_url())._replace(path=f"/{name}").geturl()


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect(server_url(), timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@cache
def unreachable() -> str | None:
    """Why the server cannot be used, or None when it can."""
    try:
        asyncio.run(_admin("SELECT 1"))
    except Exception as exc:
        return type(exc).__name__
    return None


def require_postgres() -> None:
    why = unreachable()
    if why is None:
        return
    message = UNREACHABLE.format(where=_where(server_url()), why=why)
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message}: CI runs the PostgreSQL tests, never skips them", pytrace=False)
    pytest.skip(f"{message}: the PostgreSQL half was skipped")


def create_database(prefix: str = "synthorg_test") -> str:
    name = f"{prefix}_{secrets.token_hex(6)}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    return name


def drop_database(name: str) -> None:
    asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextmanager
def throwaway_database(prefix: str = "synthorg_test") -> Iterator[str]:
    """A fresh database's URL for the block; dropped after, whatever happened."""
    require_postgres()
    name = create_database(prefix)
    try:
        yield database_url(name)
    finally:
        drop_database(name)
