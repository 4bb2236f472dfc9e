"""Numbers read from the wire: ASCII digits only, and only so many of them.

Python's `int()` and `str.isdigit()` take far more than a header means: other scripts' digits
(Arabic-Indic, fullwidth), superscripts (which `isdigit` accepts and `int` refuses), signs,
spaces, underscores, and strings past about 4,300 digits make `int()` raise. Every number the node
reads from a request goes through here instead, so ill-formed is simply None.
"""

from __future__ import annotations

MAX_DIGITS = 18  # any count of bytes, seconds or events the node can mean fits in 18 digits
# A JSON integer literal longer than this is refused by name (Python's own limit on turning
# a string into an int; past it `int()` raises a bare ValueError).
MAX_JSON_INT_DIGITS = 4300


class NumberTooLong(ValueError):
    """A JSON integer with more digits than any value the node could take."""

    def __init__(self) -> None:
        super().__init__(f"a number has more than {MAX_JSON_INT_DIGITS} digits")


def json_int(literal: str) -> int:
    """`parse_int` for the JSON decoder: a literal too long for `int()` is NumberTooLong."""
    if len(literal) - literal.startswith("-") > MAX_JSON_INT_DIGITS:
        raise NumberTooLong()
    return int(literal)


def ascii_digits(text: str, max_digits: int = MAX_DIGITS) -> bool:
    """Whether `text` is 1 to `max_digits` of the ASCII digits 0-9, and nothing else."""
    return 0 < len(text) <= max_digits and text.isascii() and text.isdigit()


def ascii_int(text: str | None, max_digits: int = MAX_DIGITS) -> int | None:
    """The number `text` writes in 1 to `max_digits` ASCII digits; None for anything else."""
    if text is None or not ascii_digits(text, max_digits):
        return None
    return int(text)
