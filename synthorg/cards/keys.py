"""The keys that sign this node's cards: `$SYNTHORG_CARD_KEYS`, else `card-keys.json` in the
data dir.

A key set is a JSON object `{"keys": [...]}`, oldest first; each key has its `kid` (the RFC
7638 thumbprint of its public key), `alg` (ES256 or EdDSA; never a symmetric one), when it
was made, and its private key as PKCS#8 PEM. The newest key signs; every key in the set is
published in the JWKS, so a card signed with the previous key still verifies until the
operator retires it (`synthorg-a2a keys retire`).

Replicas share one key set: give every replica the same `SYNTHORG_CARD_KEYS` (the JSON text,
as `synthorg-a2a keys generate` prints it). On first start without the variable, a fresh ES256
key is published into the data dir's file (mode 0600), once even when processes race.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from synthorg.config.company import ConfigError
from synthorg.store.private_file import ensure_private_dir, publish_once, read_private_file

KEYS_ENV = "SYNTHORG_CARD_KEYS"
KEYS_FILENAME = "card-keys.json"
ALGORITHMS = ("ES256", "EdDSA")
DEFAULT_ALGORITHM = "ES256"
MAX_KEYS = 8  # what a JWKS publishes; a rotation beyond it asks for a retirement first
MAX_KEY_SET_BYTES = 64 * 1024

PrivateKey = ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey
PublicKey = ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey
Source = Literal["env", "file"]


class CardKeyError(ConfigError):
    """The key set cannot be had or changed; the message never carries a private key."""


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def public_jwk(public: PublicKey) -> dict[str, str]:
    """The public key as a JWK with only its required members (RFC 7638's order)."""
    if isinstance(public, ed25519.Ed25519PublicKey):
        raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return {"crv": "Ed25519", "kty": "OKP", "x": _b64url(raw)}
    if not isinstance(public.curve, ec.SECP256R1):
        raise CardKeyError("only P-256 EC keys are supported")
    numbers = public.public_numbers()
    return {
        "crv": "P-256", "kty": "EC",
        "x": _b64url(numbers.x.to_bytes(32, "big")), "y": _b64url(numbers.y.to_bytes(32, "big")),
    }


def thumbprint(jwk: Mapping[str, Any]) -> str:
    """RFC 7638: SHA-256 over the JWK's required members, sorted, without whitespace."""
    required = ("crv", "kty", "x", "y") if jwk.get("kty") == "EC" else ("crv", "kty", "x")
    members = {name: jwk[name] for name in required}
    text = json.dumps(members, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return _b64url(hashlib.sha256(text.encode("ascii")).digest())


@dataclass(frozen=True)
class CardKey:
    kid: str
    alg: str
    created_at: str
    private_key: PrivateKey = field(repr=False)

    @property
    def public_jwk(self) -> dict[str, str]:
        return {**public_jwk(self.private_key.public_key()), "kid": self.kid, "alg": self.alg,
                "use": "sig"}

    def to_json(self) -> dict[str, str]:
        pem = self.private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        return {"kid": self.kid, "alg": self.alg, "created_at": self.created_at,
                "private_key": pem.decode("ascii")}


def new_key(alg: str = DEFAULT_ALGORITHM) -> CardKey:
    if alg not in ALGORITHMS:
        raise CardKeyError(f"algorithm must be one of {', '.join(ALGORITHMS)}")
    private: PrivateKey = (
        ec.generate_private_key(ec.SECP256R1()) if alg == "ES256"
        else ed25519.Ed25519PrivateKey.generate()
    )
    kid = thumbprint(public_jwk(private.public_key()))
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return CardKey(kid, alg, now, private)


def _key_from_json(item: Any, where: str) -> CardKey:
    if not isinstance(item, dict):
        raise CardKeyError(f"{where}: each key must be an object")
    alg, pem = item.get("alg"), item.get("private_key")
    if alg not in ALGORITHMS:
        raise CardKeyError(f"{where}: alg must be one of {', '.join(ALGORITHMS)}")
    if not isinstance(pem, str):
        raise CardKeyError(f"{where}: private_key must be a PEM string")
    try:
        private = serialization.load_pem_private_key(pem.encode("ascii"), password=None)
    except (ValueError, TypeError, UnicodeError):
        raise CardKeyError(f"{where}: private_key is not a readable unencrypted key") from None
    expected = ec.EllipticCurvePrivateKey if alg == "ES256" else ed25519.Ed25519PrivateKey
    if not isinstance(private, expected):
        raise CardKeyError(f"{where}: private_key does not fit alg {alg}")
    kid = thumbprint(public_jwk(private.public_key()))
    created = item.get("created_at")
    return CardKey(kid, alg, created if isinstance(created, str) else "", private)


@dataclass(frozen=True)
class CardKeySet:
    keys: tuple[CardKey, ...]  # oldest first; the last signs
    source: Source
    path: Path | None = None

    @property
    def signer(self) -> CardKey:
        return self.keys[-1]

    def jwks(self) -> dict[str, Any]:
        return {"keys": [key.public_jwk for key in self.keys]}

    def to_json(self) -> str:
        return json.dumps({"keys": [key.to_json() for key in self.keys]}, indent=2) + "\n"

    @classmethod
    def parse(cls, text: str | bytes, source: Source, path: Path | None = None) -> CardKeySet:
        where = KEYS_ENV if source == "env" else str(path)
        if len(text) > MAX_KEY_SET_BYTES:
            raise CardKeyError(f"{where}: the key set is larger than {MAX_KEY_SET_BYTES} bytes")
        try:
            document = json.loads(text)
        except (ValueError, UnicodeError):
            raise CardKeyError(f"{where}: not a JSON key set") from None
        items = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(items, list) or not items:
            raise CardKeyError(f'{where}: expected {{"keys": [...]}} with at least one key')
        if len(items) > MAX_KEYS:
            raise CardKeyError(f"{where}: at most {MAX_KEYS} keys")
        keys = tuple(_key_from_json(item, where) for item in items)
        if len({key.kid for key in keys}) != len(keys):
            raise CardKeyError(f"{where}: the same key appears twice")
        return cls(keys, source, path)

    @classmethod
    def load(cls, data_dir: Path, *, create: bool = True) -> CardKeySet:
        """From the environment, else the data dir's file (made on first use if `create`)."""
        raw = os.environ.get(KEYS_ENV)
        if raw is not None and raw.strip():
            return cls.parse(raw, "env")
        path = Path(data_dir) / KEYS_FILENAME
        try:
            text = read_private_file(path)
            if text is None:
                if not create:
                    raise CardKeyError(f"{path}: no card keys yet (the node makes them at start)")
                fresh = cls((new_key(),), "file", path)
                publish_once(path, fresh.to_json().encode("ascii"))
                text = read_private_file(path)
                if text is None:  # pragma: no cover - removed between link() and read
                    raise CardKeyError(f"{path} vanished while being created")
        except OSError as exc:
            raise CardKeyError(f"{path}: cannot read or create the card keys "
                               f"({exc.strerror or exc})") from None
        return cls.parse(text, "file", path)

    def save(self) -> None:
        """Replace the data dir's file atomically (mode 0600)."""
        if self.path is None:
            raise CardKeyError(f"the keys come from {KEYS_ENV}: change the variable instead")
        ensure_private_dir(self.path.parent)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                     0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as out:
                out.write(self.to_json())
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def rotated(self, alg: str = DEFAULT_ALGORITHM) -> CardKeySet:
        if len(self.keys) >= MAX_KEYS:
            raise CardKeyError(f"already {MAX_KEYS} keys: retire one first")
        return CardKeySet((*self.keys, new_key(alg)), self.source, self.path)

    def retired(self, kid: str) -> CardKeySet:
        if kid not in {key.kid for key in self.keys}:
            raise CardKeyError(f"no key has kid {kid!r}")
        if kid == self.signer.kid:
            raise CardKeyError("that key signs the cards: rotate first, then retire it")
        return CardKeySet(tuple(k for k in self.keys if k.kid != kid), self.source, self.path)


def public_key_from_jwk(jwk: Any) -> PublicKey:
    """A public P-256 or Ed25519 key from its JWK; CardKeyError for any other kind (never a
    symmetric key), or a JWK carrying a private part."""
    if not isinstance(jwk, dict):
        raise CardKeyError("a card key must be a JWK object")
    if "d" in jwk:
        raise CardKeyError("the JWK holds a private key: give its public part only")
    try:
        if jwk.get("kty") == "EC" and jwk.get("crv") == "P-256":
            x, y = (int.from_bytes(_unb64url(jwk[n]), "big") for n in ("x", "y"))
            return ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()).public_key()
        if jwk.get("kty") == "OKP" and jwk.get("crv") == "Ed25519":
            return ed25519.Ed25519PublicKey.from_public_bytes(_unb64url(jwk["x"]))
    except (KeyError, TypeError, ValueError):
        raise CardKeyError("the JWK is not a valid public key") from None
    raise CardKeyError("a card key must be an EC P-256 or an OKP Ed25519 JWK")


def _unb64url(text: Any) -> bytes:
    if not isinstance(text, str) or len(text) > 128:
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
