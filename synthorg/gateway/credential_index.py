"""Which peer a credential belongs to, when the caller sends the credential alone.

The index maps a keyed hash (HMAC-SHA256 under a key made fresh per process) of each peer's
secret to the peer's name. A lookup hashes what was presented and reads one dict entry, so
no secret is held or compared in the clear here, and the time it takes does not depend on how
much of a secret an attacker guessed: the hashes it probes are unpredictable without the key.
The gate then compares the credential with the found record in constant time, as it does for
a named peer. The index is rebuilt when the catalog's revision moves; two peers sharing one
secret make that secret name no one.

Records of scheme mtls hold a pin, not a secret: they are left out of that map (a pin sent as
a header names no one) and make a second one, from the SHA-256 of a certificate's key to the
peer that pins it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from typing import Protocol

from synthorg.store.catalog import MTLS
from synthorg.tls import pins


class IndexedRecord(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def secret(self) -> str: ...

    @property
    def scheme(self) -> str: ...


class IndexSource(Protocol):
    def revision(self) -> int: ...

    def list(self) -> Sequence[IndexedRecord]: ...


class CredentialIndex:
    def __init__(self, source: IndexSource) -> None:
        self._source = source
        self._key = secrets.token_bytes(32)
        self._names: dict[bytes, str | None] = {}
        self._pinned: dict[bytes, str | None] = {}
        self._at: int | None = None

    def _digest(self, value: bytes) -> bytes:
        return hmac.new(self._key, value, hashlib.sha256).digest()

    def find(self, presented: bytes) -> str | None:
        """The name of the one peer whose secret this is, else None."""
        self._refresh()
        return self._names.get(self._digest(presented))

    def find_certificate(self, der_certificate: bytes) -> str | None:
        """The name of the one mtls peer whose pin the certificate's key matches, else None."""
        self._refresh()
        digest = pins.spki_digest(der_certificate)
        return None if digest is None else self._pinned.get(digest)

    def _refresh(self) -> None:
        revision = self._source.revision()
        if revision == self._at:
            return
        names: dict[bytes, str | None] = {}
        pinned: dict[bytes, str | None] = {}
        for record in self._source.list():
            if getattr(record, "scheme", None) == MTLS:
                key = pins.pin_digest(record.secret)
                if key is not None:
                    pinned[key] = None if key in pinned else record.name
                continue
            digest = self._digest(record.secret.encode("utf-8", "surrogateescape"))
            names[digest] = None if digest in names else record.name
        self._names, self._pinned, self._at = names, pinned, revision
