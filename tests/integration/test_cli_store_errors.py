"""The CLI on a store it cannot use, as an operator meets it: a mistyped data dir is reported
(and not created, with a fresh key in it), `db status` needs no secret key, and a database
that is missing or not listening is named in words, not by the driver's exception class.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from cryptography.fernet import Fernet

from tests.support.node import ROOT, cli
from tests.support.postgres import database_url, require_postgres

READ_ONLY = (
    ("tasks", "list"),
    ("tasks", "get", "some-task"),
    ("db", "status"),
    ("audit", "list"),
    ("settings", "list"),
    ("settings", "get", "max_message_parts"),
)
DRIVER_WORDS = ("Error", "asyncpg", "3D000", "Exception")


def _no_driver_words(text: str) -> None:
    for word in DRIVER_WORDS:
        assert word not in text, text


@pytest.mark.parametrize("command", READ_ONLY, ids=" ".join)
def test_a_read_only_command_on_a_missing_data_dir_creates_nothing(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    missing = tmp_path / "typo"
    done = cli(missing, *command, check=False)
    assert done.returncode == 2
    assert done.stderr == f"error: no data dir {missing}\n"
    assert not missing.exists()


def test_db_status_on_postgresql_needs_no_secret_key(
    tmp_path: Path, postgres_database: str
) -> None:
    done = cli(tmp_path / "absent", "db", "status", "--json", check=False,
               env={"SYNTHORG_DATABASE_URL": postgres_database})
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["backend"] == "postgresql" and status["version"] == 0
    # What reads peer records still asks for the key, and says why.
    listed = cli(tmp_path, "peers", "list", "--no-probe", check=False,
                 env={"SYNTHORG_DATABASE_URL": postgres_database})
    assert listed.returncode == 2 and "SYNTHORG_SECRET_KEY is required" in listed.stderr


def test_a_missing_database_is_named(tmp_path: Path) -> None:
    require_postgres()
    done = cli(tmp_path, "db", "status", check=False,
               env={"SYNTHORG_DATABASE_URL": database_url("synthorg_no_such_database")})
    assert done.returncode == 2
    assert done.stderr.startswith("error: ")
    assert 'database "synthorg_no_such_database" does not exist' in done.stderr
    _no_driver_words(done.stderr)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_closed_port_is_named(tmp_path: Path) -> None:
    port = _closed_port()
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    done = cli(tmp_path, "db", "status", check=False, env={"SYNTHORG_DATABASE_URL": url})
    assert done.returncode == 2
    assert f"cannot connect to 127.0.0.1:{port} (connection refused)" in done.stderr
    _no_driver_words(done.stderr)


def test_serve_says_in_words_what_it_waits_for(tmp_path: Path) -> None:
    require_postgres()
    url = database_url("synthorg_no_such_database")
    key = Fernet.generate_key().decode()
    env = {**os.environ, "SYNTHORG_DATABASE_URL": url, "SYNTHORG_SECRET_KEY": key,
           "SYNTHORG_DATA_DIR": str(tmp_path), "SYNTHORG_BACKEND_PORT": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "synthorg.cli.main", "serve"], env=env,
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stderr is not None
    try:
        for line in proc.stderr:
            if '"store.waiting"' in line:
                event = json.loads(line)
                break
        else:
            pytest.fail("the node ended without waiting for the database")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert 'database "synthorg_no_such_database" does not exist' in event["reason"]
    _no_driver_words(event["reason"])
    assert urlsplit(url).netloc not in line


def test_a_password_in_the_url_is_never_shown(tmp_path: Path) -> None:
    port = _closed_port()
    url = f"postgresql://operator:s3cret-pass@127.0.0.1:{port}/acme?sslmode=disable"
    done = cli(tmp_path, "db", "status", check=False, env={"SYNTHORG_DATABASE_URL": url})
    assert done.returncode == 2
    assert f"cannot connect to 127.0.0.1:{port}" in done.stderr
    assert "s3cret-pass" not in done.stderr and "postgresql://" not in done.stderr
