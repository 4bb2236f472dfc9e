"""Encryption at rest for peer secrets (Fernet: AES-128-CBC + HMAC-SHA256), with rotation.

The key comes from `SYNTHORG_SECRET_KEY`, else the data dir's `secret.key`. Either may hold
several keys, newest first (separated by commas, spaces or newlines): a record encrypted with
any of them is read, and every new record is encrypted with the newest. `peers rekey`
rewrites every record with the newest, after which the older keys can be dropped.

Replicas sharing PostgreSQL must share the key: each would otherwise create a `secret.key` of
its own and none could read the others' records, so there `SYNTHORG_SECRET_KEY` is required.
"""

from __future__ import annotations

import binascii
import os
import re
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from synthorg.errors import SecretUnreadable
from synthorg.store.private_file import publish_once, read_private_file

KEY_ENV = "SYNTHORG_SECRET_KEY"
KEY_FILENAME = "secret.key"
_SEPARATORS = re.compile(r"[\s,]+")


def split_keys(raw: bytes | str) -> list[str]:
    """The keys in `raw`, newest first."""
    text = raw.decode("ascii", "replace") if isinstance(raw, bytes) else raw
    return [key for key in _SEPARATORS.split(text.strip()) if key]


# A bad key or an undecryptable value. Messages never carry keys or secrets.
SecretBoxError = SecretUnreadable


class SecretBox:
    def __init__(self, key: bytes | str) -> None:
        """One key, or several newest first (see the module docstring)."""
        keys = split_keys(key)
        try:
            if not keys:
                raise ValueError
            self._fernet = MultiFernet([Fernet(each) for each in keys])
            self.key_count = len(keys)
        except (ValueError, TypeError, binascii.Error):
            # `from None`: the underlying error must not drag the key into a traceback.
            raise SecretBoxError(
                "invalid encryption key: expected a Fernet key (32 url-safe base64 bytes)"
            ) from None

    def __repr__(self) -> str:
        return "SecretBox(<key redacted>)"

    def encrypt(self, plaintext: str) -> bytes:
        return self._fernet.encrypt(plaintext.encode("utf-8"))

    def rotate(self, token: bytes) -> bytes:
        """`token` encrypted again with the newest key (its plaintext never leaves here)."""
        try:
            return self._fernet.rotate(token)
        except (InvalidToken, TypeError):
            raise SecretBoxError(
                "a stored secret could not be decrypted with any key given: the key is wrong "
                "or was dropped too early, or the value is corrupt"
            ) from None

    def decrypt(self, token: bytes) -> str:
        try:
            return self._fernet.decrypt(token).decode("utf-8")
        except (InvalidToken, TypeError, UnicodeDecodeError):
            raise SecretBoxError(
                "a stored secret could not be decrypted: the key is wrong or was rotated, "
                "or the value is corrupt"
            ) from None

    @classmethod
    def for_data_dir(cls, data_dir: Path, *, shared_store: bool = False) -> SecretBox:
        """Key from $SYNTHORG_SECRET_KEY, else `data_dir/secret.key` (created on first use).
        With a `shared_store` (PostgreSQL) the environment variable is required."""
        env_key = os.environ.get(KEY_ENV)
        if env_key is None and shared_store:
            raise SecretBoxError(
                f"{KEY_ENV} is required with a shared database (SYNTHORG_DATABASE_URL): every "
                "replica and the CLI must use the same key to read each other's peer records; "
                "generate one with: python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())'"
            )
        if env_key is not None:
            if not env_key.strip():
                raise SecretBoxError(f"{KEY_ENV} is set but empty")
            try:
                return cls(env_key.strip())
            except SecretBoxError:
                raise SecretBoxError(
                    f"{KEY_ENV} is not a valid Fernet key (or list of keys, newest first)"
                ) from None
        path = Path(data_dir) / KEY_FILENAME
        key = read_private_file(path)
        if key is None:
            key = _create_key(path)
        try:
            return cls(key)
        except SecretBoxError:
            raise SecretBoxError(f"{path} does not hold a valid Fernet key") from None


def _create_key(path: Path) -> bytes:
    """Publish a fresh key at `path` and return whichever key won a race."""
    key = Fernet.generate_key()
    if publish_once(path, key + b"\n"):
        return key
    winner = read_private_file(path)
    if winner is None:  # pragma: no cover - removed between link() and read
        raise SecretBoxError(f"{path} vanished while being created") from None
    return winner
