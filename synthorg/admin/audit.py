"""The audit trail: every change to a runtime setting or a peer record, from the API or the CLI.

Each change is one JSON line appended to `audit.log` in the data directory (mode 0600; the node
and the CLI append to the same file, each line in one `write` on an `O_APPEND` descriptor, so
lines from several processes never interleave), and the same event is emitted on the event
stream (`synthorg.observability.log.emit`; a running node writes it to stderr). Lines hold
`ts`, `event`, `via` and the event's fields; never a secret, only whether it changed.

The file is opened for each line, so it can be rotated by moving it away at any time.
"""

from __future__ import annotations

import contextlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

from synthorg.observability.events.admin import AUDIT_WRITE_FAILED
from synthorg.observability.log import emit
from synthorg.store.private_file import ensure_private_dir

AUDIT_FILENAME = "audit.log"
Via = Literal["admin_api", "cli"]
_SECRET_KEYS = frozenset({"secret", "token", "api_key", "authorization", "password"})


class AuditLog:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / AUDIT_FILENAME

    def __repr__(self) -> str:
        return f"AuditLog({str(self.path)!r})"

    def prepare(self) -> None:
        """Create the file (0600) now, so a node that cannot write it fails at start-up."""
        ensure_private_dir(self.path.parent)
        os.close(self._open())

    def record(self, event: str, *, via: Via, **fields: object) -> None:
        """Emit `event` and append it to the audit file. The change it records has already
        been made, so a failure to write the file does not raise: it is reported as an event.
        (A field named like a secret is a programming error, refused before anything.)"""
        for key in fields:
            if key.lower() in _SECRET_KEYS:  # a programming error; never let it through
                raise ValueError(f"audit field {key!r} may hold a secret")
        emit(event, via=via, **cast(dict[str, Any], fields))
        line = {
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "event": event,
            "via": via,
            **fields,
        }
        try:
            data = (json.dumps(line, separators=(",", ":"), default=str) + "\n").encode()
            fd = self._open()
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except (OSError, TypeError, ValueError) as exc:
            emit(AUDIT_WRITE_FAILED, level="error", path=str(self.path), audit_event=event,
                 reason=type(exc).__name__)

    def _open(self) -> int:
        fd = os.open(
            self.path,
            os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
            0o600,
        )
        if os.fstat(fd).st_mode & 0o077:
            with contextlib.suppress(OSError):
                os.fchmod(fd, 0o600)
        return fd

    def read(self) -> list[dict[str, object]]:
        """Every recorded line, oldest first (for tests and tools)."""
        try:
            text = self.path.read_text("utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]
