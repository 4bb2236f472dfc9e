"""Numbers and versions read from requests: ASCII digits only, bounded, never a fault."""

from __future__ import annotations

import json

import pytest

from synthorg.http.headers import content_length
from synthorg.http.numbers import MAX_JSON_INT_DIGITS, NumberTooLong, ascii_int, json_int
from synthorg.http.version import major_minor

NOT_NUMBERS = ["", "\u00b2", "\u0661", "\uff15", "+5", "-5", "1_0", " 5", "5 ", "0x10", "9" * 19,
               "9" * 5000]


@pytest.mark.parametrize("text", NOT_NUMBERS)
def test_anything_but_bounded_ascii_digits_is_no_number(text: str) -> None:
    assert ascii_int(text) is None


def test_ascii_digits_are_read_up_to_the_bound() -> None:
    assert ascii_int("0") == 0 and ascii_int("9" * 18) == 10**18 - 1
    assert ascii_int("12345", 4) is None and ascii_int(None) is None


@pytest.mark.parametrize("value,length", [("12", 12), (" 12\t", 12), ("9" * 5000, 10**18),
                                          ("\u00b2", None), ("\u0661\u0662", None), ("", None)])
def test_content_length_is_ascii_digits_and_a_huge_one_is_capped(
    value: str, length: int | None
) -> None:
    assert content_length(value) == length


@pytest.mark.parametrize("value,found", [
    ("1.0", "1.0"), ("0.3", "0.3"), ("1.0.2", "1.0"), (" 1.0 ", "1.0"), ("10.20", "10.20"),
    ("1.00", None), ("01.0", None), ("1.0.01", None), ("1", None), ("1.", None),
    ("\u0661.\u0660", None), ("\uff11.\uff10", None), ("1.0\u00a0", None), ("1.0\n", None),
])
def test_a_version_is_major_minor_in_ascii_digits_without_leading_zeros(
    value: str, found: str | None
) -> None:
    assert major_minor(value) == found


def test_a_json_integer_too_long_for_int_is_named() -> None:
    assert json.loads("[" + "7" * MAX_JSON_INT_DIGITS + "]", parse_int=json_int)[0] > 0
    assert json.loads("-" + "7" * MAX_JSON_INT_DIGITS, parse_int=json_int) < 0
    with pytest.raises(NumberTooLong, match="more than 4300 digits"):
        json.loads("7" * (MAX_JSON_INT_DIGITS + 1), parse_int=json_int)
