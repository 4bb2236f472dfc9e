"""Certificate pins: `sha256//` and the base64 SHA-256 of the certificate's
SubjectPublicKeyInfo, as curl's `--pinnedpubkey` writes them.

A pin names a key, not a certificate: a peer may renew its certificate under the same key
and stay pinned. The pin is not a secret (anyone holding the certificate can compute it); what
proves the peer is the TLS handshake, in which it signs with the private key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

PIN_PREFIX = "sha256//"
_DIGEST_BYTES = 32


def spki_digest(der_certificate: bytes) -> bytes | None:
    """SHA-256 of the certificate's SubjectPublicKeyInfo; None when it does not parse."""
    try:
        key = x509.load_der_x509_certificate(der_certificate).public_key()
        spki = key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    except (ValueError, TypeError):
        return None
    return hashlib.sha256(spki).digest()


def pin_of(der_certificate: bytes) -> str:
    """The pin of a certificate (DER); ValueError when it does not parse."""
    digest = spki_digest(der_certificate)
    if digest is None:
        raise ValueError("not an X.509 certificate")
    return PIN_PREFIX + base64.b64encode(digest).decode("ascii")


def pin_of_pem(pem: bytes) -> str:
    """The pin of the first certificate in a PEM file's text; ValueError otherwise."""
    try:
        certificate = x509.load_pem_x509_certificate(pem)
    except ValueError:
        raise ValueError("not a PEM certificate") from None
    return pin_of(certificate.public_bytes(Encoding.DER))


def pin_digest(pin: str) -> bytes | None:
    """The 32 bytes a well-formed pin names; None for anything else."""
    if not isinstance(pin, str) or not pin.startswith(PIN_PREFIX):
        return None
    encoded = pin[len(PIN_PREFIX):]
    if len(encoded) != 44:  # base64 of 32 bytes, padded
        return None
    try:
        digest = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return None
    return digest if len(digest) == _DIGEST_BYTES else None


def validate_pin(pin: str) -> str:
    """The pin as stored, or ValueError saying what a pin looks like (never echoing it)."""
    if pin_digest(pin) is None:
        raise ValueError(
            f"a certificate pin is {PIN_PREFIX} and the base64 SHA-256 of the certificate's "
            "SubjectPublicKeyInfo (44 characters)"
        )
    return pin


def matches(der_certificate: bytes | None, pin: str) -> bool:
    """Whether the certificate's key is the pinned one, compared in constant time."""
    expected = pin_digest(pin)
    if der_certificate is None or expected is None:
        return False
    actual = spki_digest(der_certificate)
    return actual is not None and hmac.compare_digest(actual, expected)
