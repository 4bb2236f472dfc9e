"""Encryption at rest for peer secrets (Fernet: AES-128-CBC + HMAC-SHA256)."""

from __future__ import annotations

import binascii
import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from synthorg.errors import SecretUnreadable
from synthorg.store.private_file import publish_once, read_private_file

KEY_ENV = "SYNTHORG_SECRET_KEY"
KEY_FILENAME = "secret.key"


# A bad key or an undecryptable value. Messages never carry keys or secrets.
SecretBoxError = SecretUnreadable


class SecretBox:
    def __init__(self, key: bytes | str) -> None:
        try:
            self._fernet = Fernet(key)
        except (ValueError, TypeError, binascii.Error):
            # `from None`: the underlying error must not drag the key into a traceback.
            raise SecretBoxError(
                "invalid encryption key: expected a Fernet key (32 url-safe base64 bytes)"
            ) from None

    def __repr__(self) -> str:
        return "SecretBox(<key redacted>)"

    def encrypt(self, plaintext: str) -> bytes:
        return self._fernet.encrypt(plaintext.encode("utf-8"))

    def decrypt(self, token: bytes) -> str:
        try:
            return self._fernet.decrypt(token).decode("utf-8")
        except (InvalidToken, TypeError, UnicodeDecodeError):
            raise SecretBoxError(
                "a stored secret could not be decrypted: the key is wrong or was rotated, "
                "or the value is corrupt"
            ) from None

    @classmethod
    def for_data_dir(cls, data_dir: Path) -> SecretBox:
        """Key from $SYNTHORG_SECRET_KEY, else `data_dir/secret.key` (created on first use)."""
        env_key = os.environ.get(KEY_ENV)
        if env_key is not None:
            if not env_key.strip():
                raise SecretBoxError(f"{KEY_ENV} is set but empty")
            try:
                return cls(env_key.strip())
            except SecretBoxError:
                raise SecretBoxError(f"{KEY_ENV} is not a valid Fernet key") from None
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
