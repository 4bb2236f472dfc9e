"""AdminError bodies (spec/schemas/admin.json) and the exception handlers raise to send one."""

from __future__ import annotations

import json
from typing import Any

NO_STORE = (b"cache-control", b"no-store")


class AdminProblem(Exception):
    """A refusal: HTTP status, short code, a message for people, optionally the setting or
    field at fault (`key`) and what it allows. Messages never carry a secret."""

    def __init__(self, status: int, error: str, message: str, *, key: str | None = None,
                 allowed: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message
        self.key = key
        self.allowed = allowed

    def body(self) -> dict[str, Any]:
        return error_document(self.error, self.message, key=self.key, allowed=self.allowed)


def error_document(error: str, message: str, *, key: str | None = None,
                   allowed: str | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {"error": error, "message": message}
    if key is not None:
        document["key"] = key
    if allowed is not None:
        document["allowed"] = allowed
    return document


def json_bytes(document: Any) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()
