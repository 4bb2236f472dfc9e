"""The three inbound gates (steps 3-5), decided on headers alone.

Gate 1: ``X-A2A-Peer-Name`` names a valid peer, or, without it, the
        credential alone names one (`credential_index.py`): a secret,
        or a client certificate whose key a record of scheme mtls pins. 401, -32003
Gate 2: that peer is in ``a2a.allowed_peers``.                         403, -32004
Gate 3: the presented credential matches the peer's catalog record,
        and is not the operator's admin token. For scheme mtls the
        credential is the client certificate the TLS handshake verified
        (from the connection, never a header); no header admits such a
        peer. A certificate another record pins names another peer: a
        request carrying it is refused whatever else it carries.       401, -32003

The verdict of an admitted request (`Admitted`) carries the catalog record gate 3 matched:
the steps after the gates (the rate limit) read the peer's settings from it, so a request
costs one catalog lookup.

Everything fails closed. The one exception is ``catalog=None`` (a node started with no
catalog at all, development only): gate 3 checks no credential and the allowlist is the
sole gate (the admin token is still refused).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from synthorg.admin.token import AdminToken
from synthorg.gateway.credential_index import CredentialIndex
from synthorg.generated.constants import (
    API_KEY_HEADER,
    PEER_NAME_HEADER,
    PEER_NOT_ALLOWED,
    PEER_SCHEME_API_KEY,
    PEER_SCHEME_BEARER,
    UNAUTHENTICATED,
    RpcErrorSpec,
)
from synthorg.names import canonical_peer_name
from synthorg.store.catalog import MTLS
from synthorg.store.secretbox import SecretBoxError
from synthorg.tls import pins

# Header names as the endpoint's header map holds them: lower case.
PEER_NAME = PEER_NAME_HEADER.lower()
API_KEY = API_KEY_HEADER.lower()
AUTHORIZATION = "authorization"
# One message for every gate-3 failure, so a caller cannot probe which records exist.
BAD_CREDENTIAL_MESSAGE = "Invalid or missing credentials"


UNDECRYPTABLE = "record_undecryptable"
REASON_DETAILS = {
    UNDECRYPTABLE: "the peer's record cannot be decrypted with this node's keys: it was "
    "encrypted (peers rekey, peers add) with a key this node was not started with; restart "
    "it with that key first in SYNTHORG_SECRET_KEY (older keys after it)",
}


class PeerCredential(Protocol):
    """What gate 3 needs from a catalog record (`synthorg.store.catalog.PeerRecord`)."""

    @property
    def scheme(self) -> str: ...

    @property
    def secret(self) -> str: ...


class CredentialCatalog(Protocol):
    """The read side of the connection catalog."""

    def get(self, name: str, /) -> PeerCredential | None: ...


@dataclass(frozen=True, slots=True)
class Admitted:
    peer: str
    # The catalog record gate 3 matched (None: a node without a catalog). The steps after the
    # gates read the peer's settings from it, never from the catalog again: one lookup per
    # request, and every step sees the same record.
    record: PeerCredential | None = field(default=None, compare=False, repr=False)

    @property
    def rate_limit(self) -> float | None:
        """The record's own rate limit (`PeerRecord.rate_limit`); None: the setting applies."""
        return getattr(self.record, "rate_limit", None)


@dataclass(frozen=True, slots=True)
class Refused:
    status: int
    error: RpcErrorSpec
    reason: str  # short machine string, for logs only
    message: str  # what the caller is told; deliberately vaguer than `reason`
    peer: str | None = None  # canonical name once gate 1 passed
    detail: str | None = None  # for the operator's log: what to do about `reason`


GateResult = Admitted | Refused


def _bearer_token(headers: Mapping[str, str]) -> str | None:
    value = headers.get(AUTHORIZATION)
    if value is None:
        return None
    parts = value.strip().split(None, 1)
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return None
    return parts[1].strip() or None


def _presented(scheme: str, headers: Mapping[str, str]) -> str | None:
    if scheme == PEER_SCHEME_API_KEY:
        # X-API-Key, when sent, is the credential: a blank one is a wrong one, never a cue to
        # try the Authorization header instead (fail closed).
        api_key = headers.get(API_KEY)
        return api_key.strip() if api_key is not None else _bearer_token(headers)
    return _bearer_token(headers)


def _utf8(value: str) -> bytes | None:
    # surrogateescape round-trips header bytes that were not valid UTF-8; a str holding any
    # other lone surrogate (not from the wire) has no bytes at all.
    try:
        return value.encode("utf-8", "surrogateescape")
    except UnicodeError:
        return None


class PeerGate:
    """Decides admission for one request from its (lower-cased) headers."""

    def __init__(
        self,
        allowed_peers: frozenset[str],
        catalog: CredentialCatalog | None,
        admin_token: AdminToken,
        index: CredentialIndex | None = None,
    ) -> None:
        self.allowed_peers = allowed_peers
        self.catalog = catalog
        self.admin_token = admin_token
        self.index = index

    def check(self, headers: Mapping[str, str],
              client_cert: bytes | None = None) -> GateResult:
        """`client_cert`: the DER certificate the connection's TLS handshake verified."""
        try:
            return self._check(headers, client_cert)
        except Exception:
            # Unreachable by design; if it happens, refuse rather than 500 or admit.
            return Refused(401, UNAUTHENTICATED, "gate_error", UNAUTHENTICATED.message)

    def _check(self, headers: Mapping[str, str], client_cert: bytes | None) -> GateResult:
        raw_name = headers.get(PEER_NAME)
        cert_peer = self._named_by_certificate(client_cert)
        if raw_name is None:
            raw_name = self._named_by_credential(headers)
            if raw_name is not None and cert_peer is not None and raw_name != cert_peer:
                return Refused(401, UNAUTHENTICATED, "certificate_of_another_peer",
                               UNAUTHENTICATED.message)
            raw_name = raw_name or cert_peer
            if raw_name is None:
                return Refused(401, UNAUTHENTICATED, "missing_peer_name",
                               UNAUTHENTICATED.message)
        peer = canonical_peer_name(raw_name)
        if peer is None:
            return Refused(401, UNAUTHENTICATED, "invalid_peer_name", UNAUTHENTICATED.message)
        if peer not in self.allowed_peers:
            return Refused(403, PEER_NOT_ALLOWED, "peer_not_allowed", PEER_NOT_ALLOWED.message,
                           peer)
        reason: str | None = None
        record: PeerCredential | None = None
        if self.catalog is not None:
            reason, record = _credential_check(self.catalog, peer, headers, client_cert)
        if reason is None and cert_peer is not None and cert_peer != peer:
            reason = "certificate_of_another_peer"
        if self._presents_admin_token(headers):  # named first: the operator's token leaked
            reason = "admin_token_presented"
        if reason is not None:
            return Refused(401, UNAUTHENTICATED, reason, BAD_CREDENTIAL_MESSAGE, peer,
                           REASON_DETAILS.get(reason))
        return Admitted(peer, record)

    def _named_by_credential(self, headers: Mapping[str, str]) -> str | None:
        """The peer whose secret the request carries, when it names none. Both headers at
        once must carry the same value; gate 3 then checks the credential as for a named
        peer (its scheme's header, constant-time compare)."""
        if self.index is None:
            return None
        api_key = (headers.get(API_KEY) or "").strip() or None
        bearer = _bearer_token(headers)
        if api_key is not None and bearer is not None and api_key != bearer:
            return None
        presented = _utf8(api_key or bearer or "")
        if not presented:
            return None
        try:
            return self.index.find(presented)
        except Exception:
            return None  # e.g. a record that cannot be decrypted: fail closed

    def _named_by_certificate(self, client_cert: bytes | None) -> str | None:
        """The mtls peer whose pin the certificate's key matches; gate 3 compares again."""
        if client_cert is None or self.index is None:
            return None
        try:
            return self.index.find_certificate(client_cert)
        except Exception:
            return None  # fail closed: the certificate names no one

    def _presents_admin_token(self, headers: Mapping[str, str]) -> bool:
        """The admin token never passes a peer gate, whatever the catalog holds. Every value
        gate 3 could take as the credential is checked, read by gate 3's own parsers."""
        try:
            candidates = [
                (headers.get(API_KEY) or "").strip(),
                _bearer_token(headers) or "",
            ]
            presented = [b for b in map(_utf8, candidates) if b]
            # Check every candidate: no early exit, so timing does not say which matched.
            matches = [self.admin_token.matches(value) for value in presented]
            return any(matches)
        except Exception:
            return True  # fail closed


def _credential_check(
    catalog: CredentialCatalog, peer: str, headers: Mapping[str, str],
    client_cert: bytes | None = None,
) -> tuple[str | None, PeerCredential | None]:
    """Gate 3, on the peer's record read once: (None, record) when the credential matches,
    else (the refusal reason, None)."""
    try:
        record = catalog.get(peer)
        if record is None:
            return "no_credential_record", None
        scheme, secret = record.scheme, record.secret
    except SecretBoxError:
        return UNDECRYPTABLE, None
    except Exception:
        return "catalog_error", None
    reason = _credential_failure(scheme, secret, headers, client_cert)
    return reason, (record if reason is None else None)


def _credential_failure(
    scheme: str, secret: str, headers: Mapping[str, str], client_cert: bytes | None,
) -> str | None:
    """The refusal reason, or None when the presented credential matches the record's."""
    if not isinstance(secret, str) or not secret.strip():
        return "blank_stored_secret"
    if scheme == MTLS:  # the certificate is the credential: a header never admits the peer
        if client_cert is None:
            return "missing_certificate"
        return None if pins.matches(client_cert, secret) else "certificate_mismatch"
    if scheme not in (PEER_SCHEME_API_KEY, PEER_SCHEME_BEARER):
        return "unknown_scheme"
    presented = _presented(scheme, headers)
    if not presented:  # none sent, or a blank X-API-Key
        return "missing_credential"
    presented_bytes, secret_bytes = _utf8(presented), _utf8(secret)
    if presented_bytes is None or secret_bytes is None:
        return "credential_mismatch"
    if not hmac.compare_digest(presented_bytes, secret_bytes):
        return "credential_mismatch"
    return None
