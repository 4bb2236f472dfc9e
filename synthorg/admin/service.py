"""What the admin API and the CLI do to settings and peer records, in one place.

Each change is validated in full before anything is written, written in one store transaction,
and then audited (`synthorg.admin.audit`) with where it came from (`via`). Within a process,
changes are serialised by a lock, so a create-if-absent or replace-if-present decision and its
write cannot be interleaved with another admin change, and the audit trail records them in the
order they were made; between processes (the CLI and a node, or replicas sharing a store) each
write is one transaction and the last one wins.
"""

from __future__ import annotations

import hmac
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from synthorg.admin.audit import AuditLog, Via
from synthorg.admin.token import AdminToken
from synthorg.cards.pins import parse_pin
from synthorg.dialects.outbound import BINDINGS
from synthorg.errors import InvalidValue, PeerExists, UnknownPeer
from synthorg.names import canonical_peer_name
from synthorg.observability.events.admin import (
    PEER_CREATED,
    PEER_DELETED,
    PEER_REPLACED,
    PEERS_REKEYED,
    SETTING_CHANGED,
    SETTING_RESET,
)
from synthorg.settings.runtime import RuntimeSettings, SettingChange, SettingView
from synthorg.store.catalog import (
    MTLS,
    SCHEMES,
    Catalog,
    PeerRecord,
    canonical_endpoint,
    check_new_secret,
    require_https,
    validate_binding,
)
from synthorg.store.secretbox import SecretBoxError
from synthorg.tls.pins import validate_pin

_MAX_NAME_SHOWN = 80


def setting_json(view: SettingView) -> dict[str, Any]:
    """A SettingView (spec/schemas/admin.json); integers stay integers."""
    d = view.definition
    return {
        "name": d.name,
        "value": view.value,
        "source": view.source,
        "default": d.default,
        "type": d.type,
        "minimum": d.minimum,
        "maximum": d.maximum,
        "description": d.description,
    }


def peer_json(record: PeerRecord) -> dict[str, Any]:
    """An AdminPeer (spec/schemas/admin.json): never the secret."""
    return {
        "name": record.name,
        "endpoint": record.endpoint,
        "scheme": record.scheme,
        "rateLimit": record.rate_limit,
        "cardKey": record.card_key,
        "binding": record.binding,
        "createdAt": record.created_at,
        "updatedAt": record.updated_at,
    }


def _shown(name: str) -> str:
    clipped = name[:_MAX_NAME_SHOWN]
    return repr(clipped) + ("..." if len(name) > _MAX_NAME_SHOWN else "")


class SettingsAdmin:
    """Settings changes, audited. Naming, validating and resolving a setting is
    `RuntimeSettings`' alone; this adds the audit record, in the order of the writes."""

    def __init__(self, settings: RuntimeSettings, audit: AuditLog) -> None:
        self.settings = settings
        self._audit = audit
        self._lock = threading.Lock()

    def list(self) -> list[SettingView]:
        return self.settings.all()

    def get(self, name: str, *, allow_bare: bool = False) -> SettingView:
        return self.settings.view(name, allow_bare=allow_bare)

    def set(self, name: str, raw: Any, *, via: Via, allow_bare: bool = False,
            **context: object) -> SettingChange:
        """Validate, write, audit; returns the value in force before and after."""
        with self._lock:  # audited under the lock: the trail's order is the writes' order
            change = self.settings.set(name, raw, allow_bare=allow_bare)
            self._record(SETTING_CHANGED, change, via, context)
        return change

    def reset(self, name: str, *, via: Via, allow_bare: bool = False,
              **context: object) -> SettingChange:
        with self._lock:  # audited under the lock: the trail's order is the writes' order
            change = self.settings.reset(name, allow_bare=allow_bare)
            self._record(SETTING_RESET, change, via, context)
        return change

    def _record(self, event: str, change: SettingChange, via: Via,
                context: dict[str, object]) -> None:
        before, after = change.before, change.after
        self._audit.record(event, via=via, key=after.definition.name, old=before.value,
                           old_source=before.source, new=after.value, new_source=after.source,
                           **context)


def _field_problem(exc: ValueError) -> InvalidValue:
    """The catalog's ValueErrors start with the field's name and never echo a secret."""
    message = str(exc)
    field = message.split(" ", 1)[0]
    key = field if field in ("name", "endpoint", "scheme", "secret") else None
    return InvalidValue(message, key=key)


class Rekeyable(Protocol):
    """Other secrets sealed with the same key (push config secrets), rekeyed with the peers'."""

    def rekey(self) -> int: ...


class Rekeyed(NamedTuple):
    peers: int
    push_configs: int


class PeersAdmin:
    def __init__(self, catalog: Catalog, audit: AuditLog,
                 admin_tokens: Sequence[AdminToken],
                 push_secrets: Rekeyable | None = None) -> None:
        self.catalog = catalog
        self._audit = audit
        self._admin_tokens = tuple(admin_tokens)
        self._push_secrets = push_secrets
        self._lock = threading.Lock()

    def list(self) -> list[PeerRecord]:
        return self.catalog.list()

    def get(self, name: str) -> PeerRecord:
        """The record (404 when there is none); raises SecretBoxError when its secret cannot
        be decrypted."""
        exists, record = self._lookup(name)
        if record is None:
            if exists:
                record = self.catalog.get(name)  # raises the SecretBoxError again
            raise UnknownPeer(f"no peer named {_shown(name)}")
        return record

    def require(self, name: str) -> None:
        """404 unless a record by this (canonical) name exists, readable or not."""
        if not self._lookup(name)[0]:
            raise UnknownPeer(f"no peer named {_shown(name)}")

    def _lookup(self, name: str) -> tuple[bool, PeerRecord | None]:
        """(whether a record exists, the record if its secret can be read). Only the
        canonical spelling names a record here: `A` is not `a`. A record whose secret cannot
        be decrypted (a rotated key) can still be replaced or deleted, which repairs it."""
        if canonical_peer_name(name) != name:
            return False, None
        try:
            record = self.catalog.get(name)
        except SecretBoxError:
            return True, None
        return record is not None, record

    def create(self, name: str, endpoint: str, scheme: str, secret: str, *, via: Via,
               **context: object) -> PeerRecord:
        with self._lock:
            self._validate(name, endpoint, scheme, secret)
            if self._lookup(name)[0]:
                raise PeerExists(f"a peer named {name!r} exists; replace it with PUT")
            record = self._write(name, endpoint, scheme, secret)
            self._audit_write(PEER_CREATED, None, record, True, via, context)
        return record

    def replace(self, name: str, endpoint: str, scheme: str, secret: str, *, via: Via,
                **context: object) -> PeerRecord:
        with self._lock:
            exists, old = self._lookup(name)
            if not exists:
                raise UnknownPeer(f"no peer named {_shown(name)}")
            self._validate(name, endpoint, scheme, secret)
            record = self._write(name, endpoint, scheme, secret)
            self._audit_write(PEER_REPLACED, old, record, _changed(old, secret), via, context)
        return record

    def put(self, name: str, endpoint: str, scheme: str, secret: str, *, via: Via,
            **context: object) -> tuple[PeerRecord, bool]:
        """Create or replace (the CLI's `peers add`); True when created."""
        with self._lock:
            self._validate(name, endpoint, scheme, secret)
            canonical = canonical_peer_name(name)
            assert canonical is not None  # _validate checked it
            exists, old = self._lookup(canonical)
            record = self._write(canonical, endpoint, scheme, secret)
            if not exists:
                self._audit_write(PEER_CREATED, None, record, True, via, context)
            else:
                self._audit_write(PEER_REPLACED, old, record, _changed(old, secret), via,
                                  context)
        return record, not exists

    def set_rate_limit(self, name: str, per_second: float | None, *, via: Via,
                       **context: object) -> PeerRecord:
        """Set (None: clear) a peer's rate-limit override, audited as a replaced record."""
        with self._lock:
            exists, old = self._lookup(name)
            try:
                changed = exists and self.catalog.set_rate_limit(name, per_second)
            except ValueError as exc:
                raise InvalidValue(str(exc), key="rate_limit",
                                   allowed="a number from 0 to 1000000") from None
            if not changed:
                raise UnknownPeer(f"no peer named {_shown(name)}")
            record = self.catalog.get(name)
            assert record is not None
            self._audit.record(PEER_REPLACED, via=via, peer=record.name,
                               old=None if old is None else _public(old), new=_public(record),
                               secret_changed=False, **context)
        return record

    def set_card_key(self, name: str, card_key: str | None, *, via: Via,
                     **context: object) -> PeerRecord:
        """Pin (None: unpin) the key that must sign the peer's cards, audited as a replaced
        record."""
        with self._lock:
            exists, old = self._lookup(name)
            try:
                pin = None if card_key is None else parse_pin(card_key).text
            except ValueError as exc:
                raise InvalidValue(str(exc), key="card_key",
                                   allowed="a public JWK, or JWKS-URL#THUMBPRINT") from None
            if not (exists and self.catalog.set_card_key(name, pin)):
                raise UnknownPeer(f"no peer named {_shown(name)}")
            record = self.catalog.get(name)
            assert record is not None
            self._audit.record(PEER_REPLACED, via=via, peer=record.name,
                               old=None if old is None else _public(old), new=_public(record),
                               secret_changed=False, **context)
        return record

    def set_binding(self, name: str, binding: str | None, *, via: Via,
                    **context: object) -> PeerRecord:
        """Set (None: clear) the binding delegations to the peer are sent in, audited as a
        replaced record."""
        with self._lock:
            exists, old = self._lookup(name)
            try:
                value = validate_binding(binding)
            except ValueError as exc:
                raise InvalidValue(str(exc), key="binding",
                                   allowed=", ".join(BINDINGS)) from None
            if not (exists and self.catalog.set_binding(name, value)):
                raise UnknownPeer(f"no peer named {_shown(name)}")
            record = self.catalog.get(name)
            assert record is not None
            self._audit.record(PEER_REPLACED, via=via, peer=record.name,
                               old=None if old is None else _public(old), new=_public(record),
                               secret_changed=False, **context)
        return record

    def delete(self, name: str, *, via: Via, **context: object) -> None:
        with self._lock:
            exists, old = self._lookup(name)
            if not exists or not self.catalog.remove(name):
                raise UnknownPeer(f"no peer named {_shown(name)}")
            self._audit.record(PEER_DELETED, via=via, peer=name,
                               old=None if old is None else _public(old), new=None, **context)

    def rekey(self, *, via: Via, **context: object) -> Rekeyed:
        """Encrypt every record's secret, and every push config's, again with the newest key;
        how many of each, audited."""
        with self._lock:
            count = self.catalog.rekey()
            pushes = self._push_secrets.rekey() if self._push_secrets is not None else 0
            self._audit.record(PEERS_REKEYED, via=via, count=count, push_configs=pushes,
                               **context)
        return Rekeyed(count, pushes)

    def _validate(self, name: str, endpoint: str, scheme: str, secret: str) -> None:
        """Everything the catalog would refuse, a secret too short for new input and one that is
        the admin token."""
        if canonical_peer_name(name) is None:
            raise InvalidValue(
                "name must be 1-63 characters of a-z, 0-9, '.', '_' or '-', starting with a "
                "letter or digit", key="name")
        try:
            canonical_endpoint(endpoint)
        except ValueError as exc:
            raise _field_problem(exc) from None
        if scheme not in SCHEMES:
            raise InvalidValue("scheme must be 'api_key', 'bearer' or 'mtls'",
                               key="scheme", allowed="api_key, bearer or mtls")
        if scheme == MTLS:
            try:
                validate_pin(secret)
            except ValueError as exc:
                raise InvalidValue(str(exc), key="secret") from None
            try:
                require_https(canonical_endpoint(endpoint))
            except ValueError as exc:
                raise InvalidValue(str(exc), key="endpoint") from None
        else:
            try:
                check_new_secret(secret)  # new input only: stored short secrets keep working
            except ValueError as exc:
                raise _field_problem(exc) from None
        matches = [token.matches_text(secret) for token in self._admin_tokens]
        if any(matches):
            raise InvalidValue(
                "secret must not be this node's admin token: peer credentials and the admin "
                "token are kept apart", key="secret")

    def _write(self, name: str, endpoint: str, scheme: str, secret: str) -> PeerRecord:
        try:
            self.catalog.put(name, endpoint, scheme, secret)
        except ValueError as exc:  # e.g. a secret with control characters
            raise _field_problem(exc) from None
        record = self.catalog.get(name)
        assert record is not None
        return record

    def _audit_write(self, event: str, old: PeerRecord | None, new: PeerRecord,
                     secret_changed: bool, via: Via, context: dict[str, object]) -> None:
        self._audit.record(event, via=via, peer=new.name,
                           old=None if old is None else _public(old), new=_public(new),
                           secret_changed=secret_changed, **context)


def _public(record: PeerRecord) -> dict[str, object]:
    shown: dict[str, object] = {"endpoint": record.endpoint, "scheme": record.scheme}
    if record.rate_limit is not None:
        shown["rate_limit"] = record.rate_limit
    if record.card_key is not None:
        shown["card_key"] = record.card_key
    if record.binding is not None:
        shown["binding"] = record.binding
    return shown


def _changed(old: PeerRecord | None, secret: str) -> bool:
    """Whether `secret` differs from the old record's (True when that one was unreadable)."""
    if old is None:
        return True
    return not hmac.compare_digest(old.secret.encode("utf-8", "surrogateescape"),
                                   secret.encode("utf-8", "surrogateescape"))


@dataclass(frozen=True)
class AdminService:
    """The node's admin operations (the admin handlers use it)."""

    settings: SettingsAdmin
    peers: PeersAdmin
