"""The connection catalog: one `a2a_peer` record per peer, secrets encrypted at rest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol
from urllib.parse import urlsplit

from synthorg.dialects.outbound import BINDINGS
from synthorg.generated.constants import PEER_SCHEME_MTLS, PEER_SCHEMES
from synthorg.generated.models import PeerScheme
from synthorg.names import canonical_peer_name
from synthorg.tls.pins import validate_pin

Scheme = PeerScheme
SCHEMES: frozenset[str] = PEER_SCHEMES
# mtls: the secret is the pin of the peer's certificate (synthorg.tls.pins), not a secret
# that travels; the client certificate is the credential.
MTLS = PEER_SCHEME_MTLS
MAX_SECRET_LENGTH = 4096
# Only a secret an operator enters now must be this long (`check_new_secret`): records
# written before the rule keep working, so reading a record or the store's own put never asks.
MIN_SECRET_LENGTH = 16


@dataclass(frozen=True, repr=False)
class PeerRecord:
    name: str  # canonical peer name
    endpoint: str  # base URL of the peer node, no trailing slash
    scheme: Scheme
    secret: str  # plaintext in memory only; encrypted in the database
    created_at: str  # ISO-8601 UTC
    updated_at: str
    # Requests per second this peer may make, overriding a2a.peer_rate_limit_per_second
    # (0: no limit for this peer); None: the setting applies.
    rate_limit: float | None = None
    # The key that must sign this peer's cards (a public JWK, or `JWKS-URL#thumbprint`);
    # None: its cards are accepted unverified.
    card_key: str | None = None
    # The binding calls to this peer are made in (JSONRPC, HTTP+JSON or GRPC, as its card
    # names them); None: the peer's card decides (`synthorg.dialects.outbound`).
    binding: str | None = None

    def __repr__(self) -> str:
        return (
            f"PeerRecord(name={self.name!r}, endpoint={self.endpoint!r}, "
            f"scheme={self.scheme!r}, secret='<redacted>', "
            f"created_at={self.created_at!r}, updated_at={self.updated_at!r}, "
            f"rate_limit={self.rate_limit!r}, card_key={self.card_key!r}, "
            f"binding={self.binding!r})"
        )

    __str__ = __repr__


class Catalog(Protocol):
    """The connection catalog: one record per peer, its secret decrypted only in memory."""

    def get(self, name: str) -> PeerRecord | None: ...

    def list(self) -> list[PeerRecord]: ...

    def put(self, name: str, endpoint: str, scheme: str, secret: str) -> bool:
        """Insert or replace (keeping created_at); True when the record was created."""
        ...

    def remove(self, name: str) -> bool: ...

    def set_rate_limit(self, name: str, per_second: float | None) -> bool:
        """Set (None: clear) the peer's rate-limit override; False when there is no such
        record. `put` keeps a record's override."""
        ...

    def set_card_key(self, name: str, card_key: str | None) -> bool:
        """Pin (None: unpin) the key that must sign the peer's cards; False when there is no
        such record. `put` keeps a record's pin."""
        ...

    def set_binding(self, name: str, binding: str | None) -> bool:
        """Set (None: clear) the binding calls to the peer are made in; False when there is
        no such record, ValueError for a binding the spec does not name. `put` keeps it."""
        ...

    def rekey(self) -> int:
        """Encrypt every record's secret again with the newest key (all or none); returns
        how many records were rewritten."""
        ...

    def revision(self) -> int:
        """A counter that moves whenever any record changes."""
        ...

    def addresses(self) -> PeerAddresses:
        """Names and endpoints only: never decrypts a secret."""
        ...


@dataclass(frozen=True)
class PeerAddress:
    name: str
    endpoint: str
    card_key: str | None = None
    # mtls: the pin its server certificate must have ("" when the record cannot be read,
    # which no certificate matches); None for a peer with a secret
    tls_pin: str | None = None


def tls_pin_of(record: PeerRecord | None) -> str | None:
    """An address's `tls_pin` from the record (the pin is public: no secret leaves)."""
    if record is None:
        return ""
    return record.secret if record.scheme == MTLS else None


class PeerAddresses(Protocol):
    def get(self, name: str, /) -> PeerAddress | None: ...

    def list(self) -> list[PeerAddress]: ...


def validate_record(name: str, endpoint: str, scheme: str, secret: str) -> tuple[str, str, str]:
    """Canonical (name, endpoint, scheme), or ValueError naming the field.

    Messages never echo the secret, nor the endpoint (it may carry credentials)."""
    canonical = canonical_peer_name(name)
    if canonical is None:
        raise ValueError(
            "name must be 1-63 characters of a-z, 0-9, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    if scheme not in SCHEMES:
        raise ValueError("scheme must be 'api_key', 'bearer' or 'mtls'")
    _validate_secret(secret)
    endpoint = canonical_endpoint(endpoint)
    if scheme == MTLS:
        validate_pin(secret)
        require_https(endpoint)
    return canonical, endpoint, scheme


def require_https(endpoint: str) -> None:
    """An mtls peer is reached over TLS only: its certificate is what is checked."""
    if not endpoint.lower().startswith("https://"):
        raise ValueError("endpoint must be an https URL for scheme mtls")


# The peer settings written one column at a time (`set_rate_limit`, `set_card_key`,
# `set_binding`): a closed set, so a store may name the column in its SQL.
PeerColumn = Literal["rate_limit", "card_key", "binding"]


def validate_binding(binding: str | None) -> str | None:
    """The binding as stored, or ValueError: one a card's supportedInterfaces may name."""
    if binding is not None and binding not in BINDINGS:
        raise ValueError(f"binding must be one of {', '.join(BINDINGS)}")
    return binding


MAX_RATE_LIMIT = 1_000_000.0


def validate_rate_limit(per_second: float | None) -> float | None:
    """The override as stored, or ValueError: a finite number from 0 to MAX_RATE_LIMIT."""
    if per_second is None:
        return None
    if (isinstance(per_second, bool) or not isinstance(per_second, int | float)
            or not 0 <= per_second <= MAX_RATE_LIMIT):
        raise ValueError(f"rate limit must be a number from 0 to {MAX_RATE_LIMIT:g} per second")
    return float(per_second)


def check_new_secret(secret: str) -> None:
    """ValueError unless `secret` is a valid credential long enough for new operator input
    (blank, spaced or control characters are named first). Messages never echo the secret."""
    _validate_secret(secret)
    if len(secret) < MIN_SECRET_LENGTH:
        raise ValueError(f"secret must be at least {MIN_SECRET_LENGTH} characters")


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
