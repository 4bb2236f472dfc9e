"""The three inbound gates (DESIGN §4 steps 3-5), decided on headers alone.

Gate 1: ``X-A2A-Peer-Name`` names a valid peer.   401, -32003
Gate 2: that peer is in ``a2a.allowed_peers``.     403, -32004
Gate 3: the presented credential matches the peer's catalog record.  401, -32003

Everything fails closed. The one exception is ``catalog=None`` (a node started with no
catalog at all, development only): gate 3 is skipped and the allowlist is the sole gate.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from synthorg.gateway.errors import FORBIDDEN, UNAUTHENTICATED
from synthorg.names import canonical_peer_name

PEER_NAME_HEADER = "x-a2a-peer-name"
API_KEY_HEADER = "x-api-key"
AUTHORIZATION_HEADER = "authorization"


class PeerCredential(Protocol):
    """What gate 3 needs from a catalog record (``synthorg.store.catalog.PeerRecord``)."""

    @property
    def scheme(self) -> str: ...

    @property
    def secret(self) -> str: ...


class CredentialCatalog(Protocol):
    """The read side of ``synthorg.store.catalog.Catalog``."""

    def get(self, name: str, /) -> PeerCredential | None: ...


@dataclass(frozen=True, slots=True)
class Admitted:
    peer: str


@dataclass(frozen=True, slots=True)
class Refused:
    status: int
    code: int
    reason: str  # short machine string, for logs only
    message: str  # what the caller is told; deliberately vaguer than ``reason``
    peer: str | None = None  # canonical name when gate 1 passed


GateResult = Admitted | Refused

_UNAUTHENTICATED_MSG = "Authentication required"
# One message for every gate-3 failure, so a caller cannot probe which records exist.
_BAD_CREDENTIAL_MSG = "Invalid or missing credentials"
_FORBIDDEN_MSG = "Peer is not allowed"


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """Case-insensitive lookup that works for plain dicts as well as header maps."""
    value = headers.get(name)
    if value is None:
        for key, candidate in headers.items():
            if key.lower() == name:
                value = candidate
                break
    return value


def _bearer_token(headers: Mapping[str, str]) -> str | None:
    value = _header(headers, AUTHORIZATION_HEADER)
    if value is None:
        return None
    parts = value.strip().split(None, 1)
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return None
    token = parts[1].strip()
    return token or None


def _presented(scheme: str, headers: Mapping[str, str]) -> str | None:
    if scheme == "api_key":
        api_key = (_header(headers, API_KEY_HEADER) or "").strip()
        return api_key or _bearer_token(headers)
    return _bearer_token(headers)


def _utf8(value: str) -> bytes | None:
    # surrogateescape round-trips header bytes that were not valid UTF-8.
    try:
        return value.encode("utf-8", "surrogateescape")
    except UnicodeError:
        return None


class PeerGate:
    """Decides admission for one request from its headers. Immutable; cheap to share."""

    def __init__(self, allowed_peers: frozenset[str], catalog: CredentialCatalog | None) -> None:
        self.allowed_peers = allowed_peers
        self.catalog = catalog

    def check(self, headers: Mapping[str, str]) -> GateResult:
        try:
            return self._check(headers)
        except Exception:
            # Unreachable by design; if it happens, refuse rather than 500 or admit.
            return Refused(401, UNAUTHENTICATED, "gate_error", _UNAUTHENTICATED_MSG)

    def _check(self, headers: Mapping[str, str]) -> GateResult:
        raw_name = _header(headers, PEER_NAME_HEADER)
        if raw_name is None:
            return Refused(401, UNAUTHENTICATED, "missing_peer_name", _UNAUTHENTICATED_MSG)
        peer = canonical_peer_name(raw_name)
        if peer is None:
            return Refused(401, UNAUTHENTICATED, "invalid_peer_name", _UNAUTHENTICATED_MSG)
        if peer not in self.allowed_peers:
            return Refused(403, FORBIDDEN, "peer_not_allowed", _FORBIDDEN_MSG, peer)
        if self.catalog is None:
            return Admitted(peer)
        reason = _credential_failure(self.catalog, peer, headers)
        if reason is not None:
            return Refused(401, UNAUTHENTICATED, reason, _BAD_CREDENTIAL_MSG, peer)
        return Admitted(peer)


def _credential_failure(
    catalog: CredentialCatalog, peer: str, headers: Mapping[str, str]
) -> str | None:
    """Gate 3. Returns the refusal reason, or None when the credential matches."""
    try:
        record = catalog.get(peer)
        if record is None:
            return "no_credential_record"
        scheme, secret = record.scheme, record.secret
    except Exception:
        return "catalog_error"
    if not isinstance(secret, str) or not secret.strip():
        return "blank_stored_secret"
    if scheme not in ("api_key", "bearer"):
        return "unknown_scheme"
    presented = _presented(scheme, headers)
    if presented is None:
        return "missing_credential"
    presented_bytes, secret_bytes = _utf8(presented), _utf8(secret)
    if presented_bytes is None or secret_bytes is None:
        return "credential_mismatch"
    if not hmac.compare_digest(presented_bytes, secret_bytes):
        return "credential_mismatch"
    return None
