"""The W3C traceparent parser the head-sampling decision reads before any SDK code runs."""

from __future__ import annotations

import pytest

from synthorg.observability.tracing import parse_traceparent

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


def test_a_valid_header_gives_ids_and_the_sampled_flag() -> None:
    assert parse_traceparent(f"00-{TRACE}-{PARENT}-01".encode()) == (
        int(TRACE, 16), int(PARENT, 16), True)
    assert parse_traceparent(f"00-{TRACE}-{PARENT}-00".encode())[2] is False  # type: ignore[index]
    assert parse_traceparent(f"00-{TRACE}-{PARENT}-03".encode())[2] is True  # type: ignore[index]


def test_a_later_version_is_read_as_00_with_its_extra_fields() -> None:
    assert parse_traceparent(f"01-{TRACE}-{PARENT}-01-extra".encode()) == (
        int(TRACE, 16), int(PARENT, 16), True)


@pytest.mark.parametrize("value", [
    b"",
    f"00-{TRACE}-{PARENT}-01-extra".encode(),  # version 00 has exactly four fields
    f"ff-{TRACE}-{PARENT}-01".encode(),  # version ff is invalid
    f"00-{'0' * 32}-{PARENT}-01".encode(),  # all-zero trace id
    f"00-{TRACE}-{'0' * 16}-01".encode(),  # all-zero parent id
    f"00-{TRACE.upper()}-{PARENT}-01".encode(),  # hex is lower case
    f"00-{TRACE[:-1]}-{PARENT}-01".encode(),
    f"01-{TRACE}-{PARENT}-01x".encode(),
    b"x" * 10_000,
])
def test_anything_else_is_no_caller_context(value: bytes) -> None:
    assert parse_traceparent(value) is None
