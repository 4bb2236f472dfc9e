"""The connection catalog in SQLite, with decrypted records cached per catalog revision.

The gate asks for a peer's record on every request. Decrypting it each time (Fernet) and
reading it through the store cost more than the rest of the gate together, so records are
kept decrypted in memory and dropped as soon as the catalog's revision moves: a `peers add`,
a changed secret or a `peers remove` from any process applies to the next request.
"""

from __future__ import annotations

import sqlite3
from typing import cast

from synthorg.clock import utc_now
from synthorg.names import canonical_peer_name
from synthorg.store.catalog import (
    MTLS,
    PeerAddress,
    PeerColumn,
    PeerRecord,
    Scheme,
    tls_pin_of,
    validate_binding,
    validate_rate_limit,
    validate_record,
)
from synthorg.store.secretbox import SecretBox, SecretBoxError
from synthorg.store.sqlite.database import Database
from synthorg.store.sqlite.revisions import CATALOG, Revisions

_COLUMNS = "name, endpoint, scheme, secret_enc, created_at, updated_at"
_READ = f"{_COLUMNS}, rate_limit, card_key, binding"
MAX_CACHED = 4096  # records and misses kept between catalog changes
CatalogRow = tuple[str, str, str, bytes, str, str, float | None, str | None, str | None]


class SqliteCatalog:
    def __init__(self, db: Database, box: SecretBox, revisions: Revisions | None = None) -> None:
        self._db = db
        self._box = box
        self._revisions = revisions or Revisions(db)
        self._cache: dict[str, PeerRecord | None] = {}
        self._cached_at = -1

    def get(self, name: str) -> PeerRecord | None:
        canonical = canonical_peer_name(name)
        if canonical is None:
            return None
        revision = self._revisions.of(CATALOG)
        if revision != self._cached_at:
            self._cache.clear()
            self._cached_at = revision
        if canonical in self._cache:
            return self._cache[canonical]
        row = self._db.query_one(f"SELECT {_READ} FROM peers WHERE name = ?", (canonical,))
        record = None if row is None else self._record(cast(CatalogRow, row))
        if len(self._cache) >= MAX_CACHED:
            self._cache.clear()
        self._cache[canonical] = record  # a decryption failure raises and is not kept
        return record

    def put(self, name: str, endpoint: str, scheme: str, secret: str) -> bool:
        canonical, endpoint, scheme = validate_record(name, endpoint, scheme, secret)
        secret_enc = self._box.encrypt(secret)
        now = utc_now()

        def job(conn: sqlite3.Connection) -> bool:
            existed = conn.execute("SELECT 1 FROM peers WHERE name = ?", (canonical,)).fetchone()
            conn.execute(
                f"INSERT INTO peers ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET endpoint = excluded.endpoint, "
                "scheme = excluded.scheme, secret_enc = excluded.secret_enc, "
                "updated_at = excluded.updated_at",
                (canonical, endpoint, scheme, secret_enc, now, now),
            )
            return existed is None

        return self._db.write_blocking(job)

    def remove(self, name: str) -> bool:
        canonical = canonical_peer_name(name)
        if canonical is None:
            return False

        def job(conn: sqlite3.Connection) -> bool:
            return conn.execute("DELETE FROM peers WHERE name = ?", (canonical,)).rowcount > 0

        return self._db.write_blocking(job)

    def set_rate_limit(self, name: str, per_second: float | None) -> bool:
        return self._set_column(name, "rate_limit", validate_rate_limit(per_second))

    def set_card_key(self, name: str, card_key: str | None) -> bool:
        return self._set_column(name, "card_key", card_key)

    def set_binding(self, name: str, binding: str | None) -> bool:
        return self._set_column(name, "binding", validate_binding(binding))

    def _set_column(self, name: str, column: PeerColumn, value: object) -> bool:
        """One peer's setting written; False when no peer has that name. `column` is one of
        a closed set (the Literal), never caller text, so it may be spliced into the SQL."""
        canonical = canonical_peer_name(name)
        if canonical is None:
            return False
        now = utc_now()

        def job(conn: sqlite3.Connection) -> bool:
            return conn.execute(
                f"UPDATE peers SET {column} = ?, updated_at = ? WHERE name = ?",
                (value, now, canonical),
            ).rowcount > 0

        return self._db.write_blocking(job)

    def rekey(self) -> int:
        """Encrypt every record again with the newest key; the number rewritten."""
        box = self._box

        def job(conn: sqlite3.Connection) -> int:
            rows = conn.execute("SELECT name, secret_enc FROM peers ORDER BY name").fetchall()
            for name, token in rows:
                try:
                    rotated = box.rotate(token)
                except SecretBoxError as exc:
                    raise SecretBoxError(f"peer {name!r}: {exc}") from None
                conn.execute("UPDATE peers SET secret_enc = ? WHERE name = ?", (rotated, name))
            return len(rows)

        return self._db.write_blocking(job)

    def _record(self, row: CatalogRow) -> PeerRecord:
        (name, endpoint, scheme, secret_enc, created_at, updated_at, rate_limit, card_key,
         binding) = row
        try:
            secret = self._box.decrypt(secret_enc)
        except SecretBoxError as exc:
            raise SecretBoxError(f"peer {name!r}: {exc}") from None
        return PeerRecord(name, endpoint, cast(Scheme, scheme), secret, created_at, updated_at,
                          rate_limit, card_key, binding)

    def revision(self) -> int:
        """Moves on every change to the catalog, by any process."""
        return self._revisions.of(CATALOG)

    def addresses(self) -> SqlitePeerAddresses:
        return SqlitePeerAddresses(self._db, self)

    # Last, so the annotations above resolve `list` to the builtin, not this method.
    def list(self) -> list[PeerRecord]:
        rows = self._db.query(f"SELECT {_READ} FROM peers ORDER BY name")
        return [self._record(cast(CatalogRow, row)) for row in rows]


class SqlitePeerAddresses:
    """Where each catalog peer lives, for card discovery: no secret is read, so a record
    that cannot be decrypted never breaks a skills query. An mtls record's pin (public) is
    read through the catalog's cache; one that cannot be read pins nothing: ""."""

    def __init__(self, db: Database, catalog: SqliteCatalog) -> None:
        self._db, self._catalog = db, catalog

    def get(self, name: str, /) -> PeerAddress | None:
        canonical = canonical_peer_name(name)
        if canonical is None:
            return None
        row = self._db.query_one(
            "SELECT name, endpoint, card_key, scheme FROM peers WHERE name = ?", (canonical,))
        return None if row is None else self._address(row)

    def list(self) -> list[PeerAddress]:
        rows = self._db.query("SELECT name, endpoint, card_key, scheme FROM peers "
                              "ORDER BY name")
        return [self._address(row) for row in rows]

    def _address(self, row: tuple[str, str, str | None, str]) -> PeerAddress:
        return PeerAddress(row[0], row[1], row[2],
                           _pin(self._catalog, row[0]) if row[3] == MTLS else None)


def _pin(catalog: SqliteCatalog, name: str) -> str:
    try:
        return tls_pin_of(catalog.get(name)) or ""
    except SecretBoxError:
        return ""
