"""Choosing the store, its settings from the environment, the shared key, the schema commands,
and a node refusing what it must refuse, with one line (both backends where it applies)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest
from cryptography.fernet import Fernet

from synthorg.cli.main import main
from synthorg.store.postgres.backend import PgStores
from synthorg.store.postgres.options import OptionsError, PgOptions, options_from
from synthorg.store.secretbox import KEY_ENV, SecretBox, SecretBoxError
from synthorg.store.select import LEASE_ENV, open_stores, runner_from_env
from synthorg.store.sqlite.backend import SqliteStores

ROOT = Path(__file__).resolve().parents[2]
URL = "postgresql://user:hunter2@db.internal:5432/synthorg"


def test_sqlite_unless_a_database_url_is_set() -> None:
    assert options_from({}) is None
    assert options_from({"SYNTHORG_DATABASE_URL": "  "}) is None
    options = options_from({"SYNTHORG_DATABASE_URL": URL})
    assert options is not None and options.pool_size == 10 and options.statement_timeout == 5.0


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"SYNTHORG_DATABASE_URL": "mysql://x/y"}, "must be a postgresql:// URL"),
        ({"SYNTHORG_DATABASE_URL": URL, "SYNTHORG_DATABASE_POOL_SIZE": "0"},
         "SYNTHORG_DATABASE_POOL_SIZE must be an integer from 1 to 200"),
        ({"SYNTHORG_DATABASE_URL": URL, "SYNTHORG_DATABASE_STATEMENT_TIMEOUT": "soon"},
         "SYNTHORG_DATABASE_STATEMENT_TIMEOUT must be a number"),
    ],
)
def test_unusable_settings_are_named_never_the_url(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(OptionsError, match=fragment) as caught:
        options_from(env)
    assert "hunter2" not in str(caught.value) and "db.internal" not in str(caught.value)


def test_the_url_never_shows_in_a_repr() -> None:
    options = PgOptions(URL)
    stores = PgStores(options, SecretBox(Fernet.generate_key()))
    try:
        for text in (repr(options), repr(stores), repr(stores.db), str(options)):
            assert "hunter2" not in text and "db.internal" not in text
    finally:
        stores.close()


def test_runner_lease_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LEASE_ENV, "4")
    assert runner_from_env().lease_seconds == 4.0
    assert runner_from_env().id != runner_from_env().id  # a runner is new at every start
    monkeypatch.setenv(LEASE_ENV, "0")
    with pytest.raises(OptionsError, match=LEASE_ENV):
        runner_from_env()


def test_a_shared_database_requires_the_shared_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYNTHORG_DATABASE_URL", URL)
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(SecretBoxError, match=f"{KEY_ENV} is required with a shared database"):
        open_stores(tmp_path, migrate=False)
    assert not (tmp_path / "secret.key").exists()  # no per-data-dir key was made instead


def test_a_replica_without_the_shared_key_refuses_to_start_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYNTHORG_DATABASE_URL", URL)
    monkeypatch.delenv(KEY_ENV, raising=False)
    code = main(["serve", "--data-dir", str(tmp_path), "--port", "0"])
    err = capsys.readouterr().err
    assert code == 2
    line = next(line for line in err.splitlines() if line.startswith("error:"))
    assert f"{KEY_ENV} is required" in line and "hunter2" not in err


def test_several_keys_newest_first_read_old_records(tmp_path: Path) -> None:
    old, new = Fernet.generate_key(), Fernet.generate_key()
    token = SecretBox(old).encrypt("s3cret")
    both = SecretBox(new + b", " + old)
    assert both.decrypt(token) == "s3cret"
    assert SecretBox(new).decrypt(both.encrypt("fresh")) == "fresh"  # encrypted with the newest
    assert SecretBox(new).decrypt(both.rotate(token)) == "s3cret"
    (tmp_path / "secret.key").write_bytes(new + b"\n" + old + b"\n")  # the key file, likewise
    assert SecretBox.for_data_dir(tmp_path).decrypt(token) == "s3cret"


# -- the schema commands, on both backends ----------------------------------------------------


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code = main(list(args))
    out = capsys.readouterr().out
    assert code == 0, out
    found: dict[str, object] = json.loads(out)
    return found


def test_db_status_and_migrate_on_sqlite(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    data_dir = str(tmp_path / "data")
    SqliteStores(tmp_path / "data", migrate_now=False).close()  # an empty file
    status = cli_json(capsys, "db", "status", "--json", "--data-dir", data_dir)
    assert status["version"] == 0 and status["backend"] == "sqlite" and status["pending"]
    migrated = cli_json(capsys, "db", "migrate", "--json", "--data-dir", data_dir)
    assert migrated["from"] == 0 and migrated["version"] == migrated["latest"]
    assert main(["db", "status", "--data-dir", data_dir]) == 0
    assert "(current)" in capsys.readouterr().out


def test_db_status_and_migrate_on_postgresql_and_a_newer_schema_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    postgres_database: str,
) -> None:
    monkeypatch.setenv("SYNTHORG_DATABASE_URL", postgres_database)
    monkeypatch.setenv(KEY_ENV, Fernet.generate_key().decode())
    data_dir = str(tmp_path)
    assert cli_json(capsys, "db", "status", "--json", "--data-dir", data_dir)["version"] == 0
    migrated = cli_json(capsys, "db", "migrate", "--json", "--data-dir", data_dir)
    assert (migrated["from"], migrated["version"]) == (0, migrated["latest"])
    assert main(["db", "migrate", "--data-dir", data_dir]) == 0
    assert "already at version" in capsys.readouterr().out
    out = capsys.readouterr().out
    assert "postgresql://" not in out

    async def from_the_future() -> None:
        conn = await asyncpg.connect(postgres_database)
        await conn.execute("INSERT INTO schema_migrations (version, name) VALUES (99, 'x')")
        await conn.close()

    asyncio.run(from_the_future())
    assert main(["db", "migrate", "--data-dir", data_dir]) == 2
    assert "newer than this release knows" in capsys.readouterr().err
    # A node refuses to serve it, with one line, and exits.
    env = {**os.environ, "SYNTHORG_DATA_DIR": data_dir, "SYNTHORG_BACKEND_PORT": "0"}
    done = subprocess.run([sys.executable, "-m", "synthorg.api"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(errors) == 1 and "schema version 99 is newer than this release" in errors[0]
    assert "postgresql://" not in done.stderr


def test_probes_answer_without_credentials_and_say_nothing_more(tmp_path: Path) -> None:
    """/healthz: the process serves; /readyz: the store answers at the current schema."""
    import httpx

    from synthorg.node import Node

    node = Node.build(tmp_path)
    app = node.app()

    async def probe(path: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://node") as client:
            return await client.get(path)

    try:
        live, ready = asyncio.run(probe("/healthz")), asyncio.run(probe("/readyz"))
        assert (live.status_code, live.json()) == (200, {"status": "ok"})
        assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
        assert ready.headers["cache-control"] == "no-store"
        node.stores.db.writer.execute("PRAGMA user_version = 99")  # type: ignore[attr-defined]
        not_ready = asyncio.run(probe("/readyz"))
        assert (not_ready.status_code, not_ready.json()) == (503, {"status": "unavailable"})
    finally:
        node.close()
