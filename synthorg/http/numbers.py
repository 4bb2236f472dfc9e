"""Numbers read from the wire: ASCII digits only, and only so many of them.

Python's `int()` and `str.isdigit()` take far more than a header means: other scripts' digits
(Arabic-Indic, fullwidth), superscripts (which `isdigit` accepts and `int` refuses), signs,
spaces, underscores, and strings past about 4,300 digits make `int()` raise. Every number the node
reads from a request goes through here instead, so ill-formed is simply None.
"""

from __future__ import annotations

MAX_DIGITS = 18  # any count of bytes, seconds or events the node can mean fits in 18 digits


def ascii_digits(text: str, max_digits: int = MAX_DIGITS) -> bool:
    """Whether `text` is 1 to `max_digits` of the ASCII digits 0-9, and nothing else."""
    return 0 < len(text) <= max_digits and text.isascii() and text.isdigit()


def ascii_int(text: str | None, max_digits: int = MAX_DIGITS) -> int | None:
    """The number `text` writes in 1 to `max_digits` ASCII digits; None for anything else."""
    if text is None or not ascii_digits(text, max_digits):
        return None
    return int(text)
