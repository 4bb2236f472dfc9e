"""The connection catalog: one `a2a_peer` record per peer, secrets encrypted at rest."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from typing import Literal, Protocol, cast
from urllib.parse import urlsplit

from synthorg.names import canonical_peer_name
from synthorg.store.db import connection_lock, transaction, utc_now
from synthorg.store.secretbox import SecretBox, SecretBoxError

Scheme = Literal["api_key", "bearer"]
SCHEMES: frozenset[str] = frozenset({"api_key", "bearer"})
MAX_SECRET_LENGTH = 4096


@dataclass(frozen=True, repr=False)
class PeerRecord:
    name: str  # canonical peer name
    endpoint: str  # base URL of the peer node, no trailing slash
    scheme: Scheme
    secret: str  # plaintext in memory only; encrypted in the database
    created_at: str  # ISO-8601 UTC
    updated_at: str

    def __repr__(self) -> str:
        return (
            f"PeerRecord(name={self.name!r}, endpoint={self.endpoint!r}, "
            f"scheme={self.scheme!r}, secret='<redacted>', "
            f"created_at={self.created_at!r}, updated_at={self.updated_at!r})"
        )

    __str__ = __repr__


class Catalog(Protocol):
    def get(self, name: str) -> PeerRecord | None: ...

    def list(self) -> list[PeerRecord]: ...

    def put(self, name: str, endpoint: str, scheme: str, secret: str) -> bool: ...

    def remove(self, name: str) -> bool: ...


_COLUMNS = "name, endpoint, scheme, secret_enc, created_at, updated_at"


class SqliteCatalog:
    """Reads go straight to the database (no cache), so a CLI edit in another process
    applies to the very next request."""

    def __init__(self, conn: sqlite3.Connection, box: SecretBox) -> None:
        self._conn = conn
        self._box = box
        self._lock = connection_lock(conn) or threading.RLock()

    def get(self, name: str) -> PeerRecord | None:
        canonical = canonical_peer_name(name)
        if canonical is None:
            return None
        with self._lock:
            row = self._conn.execute(
                f"SELECT {_COLUMNS} FROM peers WHERE name = ?", (canonical,)
            ).fetchone()
        return None if row is None else self._record(row)

    def put(self, name: str, endpoint: str, scheme: str, secret: str) -> bool:
        """Insert or replace the record (keeping created_at); True when it was created."""
        canonical, endpoint, scheme = _validate(name, endpoint, scheme, secret)
        secret_enc = self._box.encrypt(secret)
        now = utc_now()
        with transaction(self._conn, self._lock) as conn:
            existed = conn.execute("SELECT 1 FROM peers WHERE name = ?", (canonical,)).fetchone()
            conn.execute(
                f"INSERT INTO peers ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET endpoint = excluded.endpoint, "
                "scheme = excluded.scheme, secret_enc = excluded.secret_enc, "
                "updated_at = excluded.updated_at",
                (canonical, endpoint, scheme, secret_enc, now, now),
            )
        return existed is None

    def remove(self, name: str) -> bool:
        canonical = canonical_peer_name(name)
        if canonical is None:
            return False
        with transaction(self._conn, self._lock) as conn:
            cursor = conn.execute("DELETE FROM peers WHERE name = ?", (canonical,))
        return cursor.rowcount > 0

    def _record(self, row: tuple[str, str, str, bytes, str, str]) -> PeerRecord:
        name, endpoint, scheme, secret_enc, created_at, updated_at = row
        try:
            secret = self._box.decrypt(secret_enc)
        except SecretBoxError as exc:
            raise SecretBoxError(f"peer {name!r}: {exc}") from None
        return PeerRecord(name, endpoint, cast(Scheme, scheme), secret, created_at, updated_at)

    def addresses(self) -> PeerAddresses:
        """A read-only view of names and endpoints that never decrypts a secret."""
        return PeerAddresses(self._conn, self._lock)

    # Last, so the annotations above resolve `list` to the builtin, not this method.
    def list(self) -> list[PeerRecord]:
        with self._lock:
            rows = self._conn.execute(f"SELECT {_COLUMNS} FROM peers ORDER BY name").fetchall()
        return [self._record(row) for row in rows]


@dataclass(frozen=True)
class PeerAddress:
    name: str
    endpoint: str


class PeerAddresses:
    """Where each catalog peer lives, for card discovery: no secret is read, so a record
    that cannot be decrypted never breaks a skills query."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn, self._lock = conn, lock

    def get(self, name: str, /) -> PeerAddress | None:
        canonical = canonical_peer_name(name)
        if canonical is None:
            return None
        with self._lock:
            row = self._conn.execute(
                "SELECT name, endpoint FROM peers WHERE name = ?", (canonical,)
            ).fetchone()
        return None if row is None else PeerAddress(*row)

    def list(self) -> list[PeerAddress]:
        with self._lock:
            rows = self._conn.execute("SELECT name, endpoint FROM peers ORDER BY name").fetchall()
        return [PeerAddress(*row) for row in rows]


def _validate(name: str, endpoint: str, scheme: str, secret: str) -> tuple[str, str, str]:
    """Canonical (name, endpoint, scheme), or ValueError naming the field.

    Messages never echo the secret, nor the endpoint (it may carry credentials)."""
    canonical = canonical_peer_name(name)
    if canonical is None:
        raise ValueError(
            "name must be 1-63 characters of a-z, 0-9, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    if scheme not in SCHEMES:
        raise ValueError("scheme must be 'api_key' or 'bearer'")
    _validate_secret(secret)
    return canonical, canonical_endpoint(endpoint), scheme


def _validate_secret(secret: str) -> None:
    if not isinstance(secret, str) or not secret.strip():
        raise ValueError("secret must not be blank")
    if len(secret) > MAX_SECRET_LENGTH:
        raise ValueError(f"secret must be at most {MAX_SECRET_LENGTH} characters")
    # It travels in an HTTP header: peers' servers strip surrounding whitespace (so it could
    # never match) and control characters would allow header injection.
    if secret != secret.strip():
        raise ValueError("secret must not have leading or trailing whitespace")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in secret):
        raise ValueError("secret must not contain control characters")


def canonical_endpoint(endpoint: str) -> str:
    """An absolute http(s) base URL without credentials, query or fragment; no trailing '/'."""
    error = ValueError(
        "endpoint must be an absolute http(s) URL without credentials, query or fragment"
    )
    if not isinstance(endpoint, str):
        raise error
    url = endpoint.strip()
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        raise error
    if "?" in url or "#" in url:
        raise error
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on an out-of-range or non-numeric port
    except ValueError:
        raise error from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise error
    if "@" in parts.netloc:
        raise error
    return url.rstrip("/")
