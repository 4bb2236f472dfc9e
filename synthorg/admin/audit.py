"""The audit trail: every change to a runtime setting or a peer record, from the API or the CLI.

Each change is one record in the store (`synthorg.store.audit.AuditStore`: SQLite's `audit`
table, or PostgreSQL's, which every replica and the CLI share), and the same event is emitted
on the event stream (`synthorg.observability.log.emit`; a running node writes it to stderr).
Records hold `ts`, `event`, `via` and the event's fields; never a secret, only whether it
changed. `synthorg-a2a audit list` reads them back.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal, cast

from synthorg.observability.events.admin import AUDIT_WRITE_FAILED
from synthorg.observability.log import emit
from synthorg.store.audit import AuditStore, encode

Via = Literal["admin_api", "cli"]
_SECRET_KEYS = frozenset({"secret", "token", "api_key", "authorization", "password"})


def audit_time() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class AuditLog:
    def __init__(self, store: AuditStore) -> None:
        self.store = store

    def __repr__(self) -> str:
        return f"AuditLog({type(self.store).__name__})"

    def record(self, event: str, *, via: Via, **fields: object) -> None:
        """Emit `event` and commit it to the trail. The change it records has already been
        made, so a failure to write the record does not raise: it is reported as an event.
        (A field named like a secret is a programming error, refused before anything.)"""
        for key in fields:
            if key.lower() in _SECRET_KEYS:  # a programming error; never let it through
                raise ValueError(f"audit field {key!r} may hold a secret")
        emit(event, via=via, **cast(dict[str, Any], fields))
        record = {"ts": audit_time(), "event": event, "via": via, **fields}
        try:
            self.store.append(record)
        except Exception as exc:  # the store is down or refused: say so, keep the change
            emit(AUDIT_WRITE_FAILED, level="error", audit_event=event,
                 reason=type(exc).__name__)

    def read(self) -> list[dict[str, Any]]:
        """Every record, oldest first (for tests and tools)."""
        return self.store.list()


MAX_AUDIT_SCANNED = 10_000


def audit_list(store: AuditStore, *, event: str | None = None, via: str | None = None,
               peer: str | None = None, key: str | None = None, since: str | None = None,
               limit: int = 100) -> dict[str, Any]:
    """An AuditList: the newest `limit` records that match every filter given, newest first,
    from the newest MAX_AUDIT_SCANNED."""
    records = []
    for record in reversed(store.list(since, MAX_AUDIT_SCANNED)):
        if ((event is None or record.get("event") == event)
                and (via is None or record.get("via") == via)
                and (peer is None or record.get("peer") == peer)
                and (key is None or record.get("key") == key)):
            records.append({
                "ts": record.get("ts"), "event": record.get("event"), "via": record.get("via"),
                "fields": {name: _scalar(value) for name, value in record.items()
                           if name not in ("ts", "event", "via")},
            })
            if len(records) == limit:
                break
    return {"records": records}


def _scalar(value: object) -> object:
    """A field as AuditRecord holds it: a JSON scalar, or the JSON text of anything else."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return encode(value) if isinstance(value, dict) else json.dumps(value, default=str)
