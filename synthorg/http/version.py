"""An `A2A-Version` value read as the dialect it names: `Major.Minor`, a patch tolerated.

Only the documented forms, in ASCII digits without leading zeros: `1.0`, `0.3`, `1.0.2`.
`1.00`, `01.0` or `1.0` written in other scripts' digits (Arabic-Indic, fullwidth) name no
version this node speaks, so they are refused (-32009), not read as 1.0.
"""

from __future__ import annotations

import re

_NUMBER = r"(?:0|[1-9][0-9]{0,2})"
_VERSION = re.compile(
    rf"[ \t]*({_NUMBER})\.({_NUMBER})(?:\.(?:0|[1-9][0-9]{{0,5}}))?[ \t]*", re.ASCII
)


def major_minor(value: str) -> str | None:
    """`1.0.2` -> `1.0`; None when the value is not a version at all."""
    match = _VERSION.fullmatch(value)
    if match is None:
        return None
    return f"{match.group(1)}.{match.group(2)}"
