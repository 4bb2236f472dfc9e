"""Which peer a credential belongs to, when the caller sends the credential alone.

The index maps a keyed hash (HMAC-SHA256 under a key made fresh per process) of each peer's
secret to the peer's name. A lookup hashes what was presented and reads one dict entry, so
no secret is held or compared in the clear here, and the time it takes does not depend on how
much of a secret an attacker guessed: the hashes it probes are unpredictable without the key.
The gate then compares the credential with the found record in constant time, as it does for
a named peer. The index is rebuilt when the catalog's revision moves; two peers sharing one
secret make that secret name no one.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from typing import Protocol


class IndexedRecord(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def secret(self) -> str: ...


class IndexSource(Protocol):
    def revision(self) -> int: ...

    def list(self) -> Sequence[IndexedRecord]: ...


class CredentialIndex:
    def __init__(self, source: IndexSource) -> None:
        self._source = source
        self._key = secrets.token_bytes(32)
        self._names: dict[bytes, str | None] = {}
        self._at: int | None = None

    def _digest(self, value: bytes) -> bytes:
        return hmac.new(self._key, value, hashlib.sha256).digest()

    def find(self, presented: bytes) -> str | None:
        """The name of the one peer whose secret this is, else None."""
        revision = self._source.revision()
        if revision != self._at:
            names: dict[bytes, str | None] = {}
            for record in self._source.list():
                digest = self._digest(record.secret.encode("utf-8", "surrogateescape"))
                names[digest] = None if digest in names else record.name
            self._names, self._at = names, revision
        return self._names.get(self._digest(presented))
