"""Reading request headers from an ASGI scope, for the pure-ASGI gates."""

from __future__ import annotations

from collections.abc import Iterable

from synthorg.generated.constants import (
    MEDIA_TYPE_APPLICATION_A2A_JSON,
    MEDIA_TYPE_APPLICATION_JSON,
)
from synthorg.http.numbers import MAX_DIGITS, ascii_digits


def header_map(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Lower-cased names; repeated headers joined with ", " so duplicates cannot smuggle a
    second value past a gate (a joined value simply fails to match). Values are decoded as
    UTF-8 with surrogateescape: never fails, and a gate can recover the bytes."""
    out: dict[str, str] = {}
    for raw_name, raw_value in raw:
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("utf-8", "surrogateescape")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


def content_length(value: str) -> int | None:
    """Digits only (``int()`` would accept "+5", "1_0" and " 5 "); None when ill-formed.
    Absurdly long values are capped rather than parsed: they are over any limit anyway."""
    value = value.strip(" \t")
    if not ascii_digits(value, len(value) or 1):
        return None
    return int(value) if len(value) <= MAX_DIGITS else 10**MAX_DIGITS


def is_json(content_type: str | None) -> bool:
    """`application/json`, parameters allowed."""
    if content_type is None:
        return False
    return content_type.split(";", 1)[0].strip().lower() == MEDIA_TYPE_APPLICATION_JSON


def is_json_or_a2a(content_type: str | None) -> bool:
    """`application/json` or `application/a2a+json` (A2A 1.0's own media type, which the
    HTTP+JSON binding's request bodies declare), parameters allowed."""
    if content_type is None:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media in (MEDIA_TYPE_APPLICATION_JSON, MEDIA_TYPE_APPLICATION_A2A_JSON)
