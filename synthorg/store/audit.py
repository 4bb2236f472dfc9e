"""The audit trail in the store: every change to a runtime setting or a peer record.

One record per change, from any process on the store (a node, a replica, the CLI), kept in
the order the store committed them. A record is the JSON object the trail shows: `ts`,
`event`, `via` and the event's fields; never a secret (`synthorg.admin.audit` checks).
"""

from __future__ import annotations

import json
from typing import Any, Protocol


def encode(record: dict[str, Any]) -> str:
    """A record as the stores keep it: compact JSON (a value JSON cannot hold, as text)."""
    return json.dumps(record, separators=(",", ":"), default=str)


class AuditStore(Protocol):
    def append(self, record: dict[str, Any]) -> None:
        """Commit one record (its `ts` is an ISO-8601 UTC string)."""
        ...

    def list(self, since: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Records oldest first, those at or after `since` (an ISO-8601 UTC time) only; with
        `limit`, the newest `limit` of them."""
        ...
