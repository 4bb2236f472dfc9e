"""Database file and the connection catalog: modes, pragmas, validation, no caching, no leaks."""

from __future__ import annotations

import re
import sqlite3
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from synthorg.errors import SchemaTooNew
from synthorg.names import PEER_NAME_PATTERN, canonical_peer_name
from synthorg.store.catalog import PeerRecord
from synthorg.store.secretbox import KEY_ENV, SecretBox, SecretBoxError
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import DB_FILENAME, Database, open_database
from synthorg.store.sqlite.schema import SCHEMA_VERSION

SECRET = "peer-secret-0123456789-must-not-leak"
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def conn(data_dir: Path) -> Iterator[Database]:
    db = open_database(data_dir)
    yield db
    db.close()


@pytest.fixture
def catalog(conn: Database, data_dir: Path) -> SqliteCatalog:
    return SqliteCatalog(conn, SecretBox.for_data_dir(data_dir))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- peer names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (" Synthorg-A ", "synthorg-a"),
        ("peer", "peer"),
        ("0", "0"),
        ("a.b_c-d", "a.b_c-d"),
        ("\tNODE-2\n", "node-2"),
        ("a" * 63, "a" * 63),
        ("a" * 64, None),
        ("-x", None),
        (".x", None),
        ("_x", None),
        ("", None),
        ("   ", None),
        ("a b", None),
        ("peer/1", None),
        ("p\u00e9er", None),
        ("\u212a", None),  # KELVIN SIGN lower-cases to ASCII "k"; still not a valid name
    ],
)
def test_canonical_peer_name(raw: str, expected: str | None) -> None:
    assert canonical_peer_name(raw) == expected


def test_peer_name_pattern_is_anchored() -> None:
    assert re.search(PEER_NAME_PATTERN, "ok-name")
    assert not re.search(PEER_NAME_PATTERN, "bad name")
    assert not re.search(PEER_NAME_PATTERN, "-x")


# -- database file ------------------------------------------------------------------------


def test_database_files_are_private(conn: Database, data_dir: Path) -> None:
    conn.writer.execute("INSERT INTO settings VALUES ('a2a', 'k', '1', 'now')")
    assert mode(data_dir) == 0o700
    db_file = data_dir / DB_FILENAME
    assert mode(db_file) == 0o600
    for suffix in ("-wal", "-shm"):
        assert mode(db_file.with_name(db_file.name + suffix)) == 0o600


def test_existing_database_file_is_tightened(tmp_path: Path) -> None:
    db_file = tmp_path / DB_FILENAME
    open_database(tmp_path).close()
    db_file.chmod(0o644)
    open_database(tmp_path).close()
    assert mode(db_file) == 0o600


def test_pragmas_and_schema(conn: Database, data_dir: Path) -> None:
    def pragma(name: str, handle: sqlite3.Connection = conn.reader) -> object:
        return handle.execute(f"PRAGMA {name}").fetchone()[0]

    assert pragma("journal_mode") == "wal"
    assert pragma("synchronous") == 1  # NORMAL
    assert pragma("busy_timeout") == 2000  # a reader waits only out a crashed writer's recovery
    assert pragma("busy_timeout", conn.writer) == 0  # a writer waits on the event loop instead
    assert pragma("foreign_keys") == 1
    assert pragma("user_version") == SCHEMA_VERSION
    assert conn.reader.isolation_level is None and conn.writer.isolation_level is None
    tables = {row[0] for row in conn.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"peers", "tasks", "message_keys", "settings"} <= tables
    # Reopening is idempotent.
    open_database(data_dir).close()


def test_newer_schema_is_refused(data_dir: Path) -> None:
    db = open_database(data_dir)
    db.writer.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(SchemaTooNew, match="newer"):
        open_database(data_dir)


# -- catalog ------------------------------------------------------------------------------


def test_put_get_round_trip(catalog: SqliteCatalog) -> None:
    assert catalog.put(" Peer-A ", "https://a.example:8443/base/", "api_key", SECRET) is True
    record = catalog.get("peer-a")
    assert record is not None
    assert (record.name, record.endpoint, record.scheme, record.secret) == (
        "peer-a",
        "https://a.example:8443/base",
        "api_key",
        SECRET,
    )
    assert record.created_at == record.updated_at
    assert record.created_at.endswith("Z")
    assert catalog.get("PEER-A") == record  # lookups are canonicalised too
    assert catalog.get("missing") is None
    assert catalog.get("-invalid") is None


def test_put_replaces_and_keeps_created_at(catalog: SqliteCatalog) -> None:
    assert catalog.put("peer-a", "http://a.example", "api_key", SECRET) is True
    first = catalog.get("peer-a")
    assert catalog.put("peer-a", "http://b.example", "bearer", "new-secret") is False
    second = catalog.get("peer-a")
    assert first is not None and second is not None
    assert (second.endpoint, second.scheme, second.secret) == (
        "http://b.example",
        "bearer",
        "new-secret",
    )
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at


def test_list_sorted_and_remove(catalog: SqliteCatalog) -> None:
    for name in ("zeta", "alpha", "mid"):
        catalog.put(name, f"http://{name}.example", "bearer", SECRET)
    assert [r.name for r in catalog.list()] == ["alpha", "mid", "zeta"]
    assert catalog.remove("MID") is True
    assert catalog.remove("mid") is False
    assert catalog.remove("-bad") is False
    assert [r.name for r in catalog.list()] == ["alpha", "zeta"]


@pytest.mark.parametrize(
    ("field", "name", "endpoint", "scheme", "secret"),
    [
        ("name", "-x", "http://a", "api_key", SECRET),
        ("name", "a" * 64, "http://a", "api_key", SECRET),
        ("scheme", "p", "http://a", "basic", SECRET),
        ("endpoint", "p", "ftp://a", "api_key", SECRET),
        ("endpoint", "p", "/relative/path", "api_key", SECRET),
        ("endpoint", "p", "http://", "api_key", SECRET),
        ("endpoint", "p", f"http://user:{SECRET}@a", "api_key", SECRET),
        ("endpoint", "p", "http://a/?x=1", "api_key", SECRET),
        ("endpoint", "p", "http://a/?", "api_key", SECRET),
        ("endpoint", "p", "http://a/#frag", "api_key", SECRET),
        ("endpoint", "p", "http://a:99999", "api_key", SECRET),
        ("endpoint", "p", "http://a b", "api_key", SECRET),
        ("secret", "p", "http://a", "api_key", ""),
        ("secret", "p", "http://a", "api_key", "   "),
        ("secret", "p", "http://a", "api_key", "x" * 4097),
        ("secret", "p", "http://a", "api_key", f" {SECRET}"),
        ("secret", "p", "http://a", "api_key", f"{SECRET}\r\nX-Injected: 1"),
    ],
)
def test_put_rejects_bad_input_naming_the_field(
    catalog: SqliteCatalog, field: str, name: str, endpoint: str, scheme: str, secret: str
) -> None:
    with pytest.raises(ValueError, match=rf"^{field} ") as info:
        catalog.put(name, endpoint, scheme, secret)
    assert SECRET not in str(info.value)
    assert catalog.list() == []


def test_secret_length_limit_is_inclusive(catalog: SqliteCatalog) -> None:
    assert catalog.put("p", "http://a", "api_key", "x" * 4096)


def test_secrets_are_not_stored_in_plaintext(
    catalog: SqliteCatalog, conn: Database, data_dir: Path
) -> None:
    catalog.put("peer-a", "http://a.example", "api_key", SECRET)
    catalog.put("peer-b", "http://b.example", "bearer", SECRET + "-b")
    files = [p for p in data_dir.iterdir() if p.name.startswith(DB_FILENAME)]
    assert any(p.name.endswith("-wal") for p in files)
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path.name
    conn.writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert SECRET.encode() not in (data_dir / DB_FILENAME).read_bytes()


def test_repr_redacts_secret(catalog: SqliteCatalog) -> None:
    catalog.put("peer-a", "http://a.example", "api_key", SECRET)
    record = catalog.get("peer-a")
    assert record is not None
    for text in (repr(record), str(record), repr([record]), f"{record}"):
        assert SECRET not in text
        assert "peer-a" in text and "<redacted>" in text
    assert isinstance(record, PeerRecord)


def test_second_connection_sees_writes_immediately(catalog: SqliteCatalog, data_dir: Path) -> None:
    other_conn = open_database(data_dir)
    other = SqliteCatalog(other_conn, SecretBox.for_data_dir(data_dir))
    try:
        assert other.get("peer-a") is None  # a miss must not be cached either
        catalog.put("peer-a", "http://a.example", "api_key", SECRET)
        seen = other.get("peer-a")
        assert seen is not None and seen.secret == SECRET
        catalog.put("peer-a", "http://a.example", "api_key", "rotated")
        seen = other.get("peer-a")
        assert seen is not None and seen.secret == "rotated"
        catalog.remove("peer-a")
        assert other.get("peer-a") is None
    finally:
        other_conn.close()


def test_another_process_write_is_visible(catalog: SqliteCatalog, data_dir: Path) -> None:
    assert catalog.get("from-cli") is None
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from synthorg.store.sqlite.catalog import SqliteCatalog
        from synthorg.store.sqlite.database import open_database
        from synthorg.store.secretbox import SecretBox
        data_dir = Path(sys.argv[1])
        catalog = SqliteCatalog(open_database(data_dir), SecretBox.for_data_dir(data_dir))
        catalog.put("from-cli", "https://cli.example", "bearer", sys.argv[2])
        """
    )
    subprocess.run(
        [sys.executable, "-c", script, str(data_dir), SECRET],
        cwd=REPO_ROOT,
        check=True,
        timeout=60,
    )
    record = catalog.get("from-cli")
    assert record is not None and record.secret == SECRET


def test_wrong_key_names_the_peer_not_the_secret(conn: Database, data_dir: Path) -> None:
    SqliteCatalog(conn, SecretBox.for_data_dir(data_dir)).put(
        "peer-a", "http://a", "api_key", SECRET
    )
    wrong = SqliteCatalog(conn, SecretBox(Fernet.generate_key()))
    with pytest.raises(SecretBoxError, match="peer-a") as info:
        wrong.get("peer-a")
    assert SECRET not in str(info.value)


def test_addresses_view_reads_no_secret_so_an_undecryptable_record_does_not_break_it(
    tmp_path: Path,
) -> None:
    conn = open_database(tmp_path)
    SqliteCatalog(conn, SecretBox(Fernet.generate_key())).put(
        "node-b", "http://127.0.0.1:9/", "api_key", "link-secret"
    )
    other_key = SqliteCatalog(conn, SecretBox(Fernet.generate_key()))
    with pytest.raises(SecretBoxError):
        other_key.list()
    addresses = other_key.addresses()
    assert [(a.name, a.endpoint) for a in addresses.list()] == [("node-b", "http://127.0.0.1:9")]
    found = addresses.get(" Node-B ")
    assert found is not None and found.endpoint == "http://127.0.0.1:9"
    assert addresses.get("node-c") is None and addresses.get("-bad") is None
