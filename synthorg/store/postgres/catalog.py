"""The connection catalog in PostgreSQL, shared by every replica.

The whole `peers` table is held in memory as of its revision (a federation has at most a
few thousand peers) and reloaded when the revision moves, so the gate's lookup is a dict
read; a record's secret is decrypted at its first use and kept until the next reload. A
`peers add`, a changed secret or a `peers remove` through any replica or the CLI applies on
every replica from its next request (`synthorg.store.postgres.revisions`).
"""

from __future__ import annotations

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
from synthorg.store.postgres.database import Connection, PgDatabase, Row
from synthorg.store.postgres.revisions import CATALOG, PgRevisions
from synthorg.store.postgres.snapshot import Snapshot
from synthorg.store.secretbox import SecretBox, SecretBoxError

_COLUMNS = "name, endpoint, scheme, secret_enc, created_at, updated_at"
_READ = f"{_COLUMNS}, rate_limit, card_key, binding"
_SNAPSHOT = (
    f"SELECT r.value, p.{_READ.replace(', ', ', p.')} FROM revisions r "
    "LEFT JOIN peers p ON true WHERE r.name = 'catalog' ORDER BY p.name"
)
CatalogRow = tuple[str, str, str, bytes, str, str, float | None, str | None, str | None]


def _rows(rows: list[Row]) -> dict[str, CatalogRow]:
    return {row[1]: cast(CatalogRow, tuple(row[1:])) for row in rows}


class PgCatalog:
    def __init__(self, db: PgDatabase, box: SecretBox, revisions: PgRevisions) -> None:
        self._db = db
        self._box = box
        self._snapshot: Snapshot[dict[str, CatalogRow]] = Snapshot(
            db, revisions, CATALOG, _SNAPSHOT, _rows
        )
        self._decrypted: dict[str, PeerRecord] = {}
        self._decrypted_at = -1

    def _rows(self) -> dict[str, CatalogRow]:
        rows = self._snapshot.current()
        if self._decrypted_at != self._snapshot.revision:
            self._decrypted.clear()
            self._decrypted_at = self._snapshot.revision
        return rows

    def get(self, name: str) -> PeerRecord | None:
        canonical = canonical_peer_name(name)
        if canonical is None:
            return None
        rows = self._rows()
        record = self._decrypted.get(canonical)
        if record is not None:
            return record
        row = rows.get(canonical)
        if row is None:
            return None
        record = self._record(row)  # a decryption failure raises and is not kept
        self._decrypted[canonical] = record
        return record

    def put(self, name: str, endpoint: str, scheme: str, secret: str) -> bool:
        canonical, endpoint, scheme = validate_record(name, endpoint, scheme, secret)
        secret_enc = self._box.encrypt(secret)
        now = utc_now()

        async def job(conn: Connection) -> bool:
            existed = await conn.fetchval("SELECT 1 FROM peers WHERE name = $1 FOR UPDATE",
                                          canonical)
            await conn.execute(
                f"INSERT INTO peers ({_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $5) "
                "ON CONFLICT (name) DO UPDATE SET endpoint = excluded.endpoint, "
                "scheme = excluded.scheme, secret_enc = excluded.secret_enc, "
                "updated_at = excluded.updated_at",
                canonical, endpoint, scheme, secret_enc, now,
            )
            return existed is None

        created = self._db.blocking(lambda db: db.transaction(job))
        self._snapshot.stale()
        return created

    def remove(self, name: str) -> bool:
        canonical = canonical_peer_name(name)
        if canonical is None:
            return False
        status = self._db.blocking(
            lambda db: db.execute("DELETE FROM peers WHERE name = $1", canonical)
        )
        self._snapshot.stale()
        return status != "DELETE 0"

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
        status = self._db.blocking(
            lambda db: db.execute(
                f"UPDATE peers SET {column} = $2, updated_at = $3 WHERE name = $1",
                canonical, value, utc_now(),
            )
        )
        self._snapshot.stale()
        return status != "UPDATE 0"

    def rekey(self) -> int:
        """Encrypt every record again with the newest key; the number rewritten."""
        async def job(conn: Connection) -> int:
            rows = await conn.fetch("SELECT name, secret_enc FROM peers ORDER BY name FOR UPDATE")
            for name, token in rows:
                await conn.execute("UPDATE peers SET secret_enc = $2 WHERE name = $1",
                                   name, self._rotated(name, bytes(token)))
            return len(rows)

        count = self._db.blocking(lambda db: db.transaction(job))
        self._snapshot.stale()
        return count

    def _rotated(self, name: str, token: bytes) -> bytes:
        try:
            return self._box.rotate(token)
        except SecretBoxError as exc:
            raise SecretBoxError(f"peer {name!r}: {exc}") from None

    def _record(self, row: CatalogRow) -> PeerRecord:
        (name, endpoint, scheme, secret_enc, created_at, updated_at, rate_limit, card_key,
         binding) = row
        try:
            secret = self._box.decrypt(bytes(secret_enc))
        except SecretBoxError as exc:
            raise SecretBoxError(f"peer {name!r}: {exc}") from None
        return PeerRecord(name, endpoint, cast(Scheme, scheme), secret, created_at, updated_at,
                          rate_limit, card_key, binding)

    def revision(self) -> int:
        """Moves on every change to the catalog, by any replica."""
        self._rows()
        return self._snapshot.revision

    def addresses(self) -> PgPeerAddresses:
        return PgPeerAddresses(self)

    def address_rows(self) -> dict[str, CatalogRow]:
        return self._snapshot.current()

    # Last, so the annotations above resolve `list` to the builtin, not this method.
    def list(self) -> list[PeerRecord]:
        return [self._record(row) for _, row in sorted(self._rows().items())]


class PgPeerAddresses:
    """Where each catalog peer lives, for card discovery: no secret is decrypted, but an
    mtls record's pin (public) is read through the catalog's cache; one that cannot be read
    pins nothing: ""."""

    def __init__(self, catalog: PgCatalog) -> None:
        self._catalog = catalog

    def get(self, name: str, /) -> PeerAddress | None:
        canonical = canonical_peer_name(name)
        if canonical is None:
            return None
        row = self._catalog.address_rows().get(canonical)
        return None if row is None else self._address(row)

    def list(self) -> list[PeerAddress]:
        return [self._address(row) for _, row in sorted(self._catalog.address_rows().items())]

    def _address(self, row: CatalogRow) -> PeerAddress:
        pin = None
        if row[2] == MTLS:
            try:
                pin = tls_pin_of(self._catalog.get(row[0])) or ""
            except SecretBoxError:
                pin = ""
        return PeerAddress(row[0], row[1], row[7], pin)
