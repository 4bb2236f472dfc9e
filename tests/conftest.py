"""Fixtures every test package may use: the store backends (SQLite, PostgreSQL)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.postgres import throwaway_database

BACKENDS = ("sqlite", "postgresql")

# The suite chooses each test's store itself: a database named in the developer's own
# environment must not turn the SQLite tests (and the nodes they start) into PostgreSQL ones.
for _name in ("SYNTHORG_DATABASE_URL", "SYNTHORG_SECRET_KEY", "SYNTHORG_RUNNER_LEASE_SECONDS"):
    os.environ.pop(_name, None)


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A throwaway database for the module (skipped, or failed in CI, without a server)."""
    with throwaway_database() as url:
        yield url


@pytest.fixture
def postgres_database() -> Iterator[str]:
    """A throwaway database for one test."""
    with throwaway_database() as url:
        yield url


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Schemathesis gives every operation's item of a `@schema.parametrize()` test the test
    function's node id (its name alone carries the operation: `test[GET /metrics]`). pytest-xdist
    (`make test` runs the suite on several workers) schedules and reports items by node id, so
    duplicates would run once: each item gets the id its name says. (`_id` is pytest's own
    attribute behind `nodeid`; pytest is pinned, and the contract modules' "reached every layer"
    tests fail if the items collapse again.)"""
    for item in items:
        if not item.nodeid.endswith(item.name) and item.parent is not None:
            item._id = item.parent.id.child(item.name)  # type: ignore[attr-defined]
