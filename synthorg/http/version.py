"""An `A2A-Version` value read as the dialect it names: `Major.Minor`, a patch tolerated."""

from __future__ import annotations

import re

_VERSION = re.compile(r"\s*(\d{1,3})\.(\d{1,3})(?:\.\d{1,6})?\s*")


def major_minor(value: str) -> str | None:
    """`1.0.2` -> `1.0`; None when the value is not a version at all."""
    match = _VERSION.fullmatch(value)
    if match is None:
        return None
    return f"{int(match.group(1))}.{int(match.group(2))}"
