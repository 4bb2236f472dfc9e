"""Schemathesis on the admin API of a live node (a real `python -m synthorg.api` process on a
loopback port), with the operator's token from `SYNTHORG_ADMIN_TOKEN`: the same checks as the
in-process run, over a real socket and uvicorn, on a smaller example budget (the in-process run
is the thorough one)."""

from __future__ import annotations

from collections.abc import Iterator

import hypothesis
import pytest

from synthorg.admin.token import TOKEN_ENV
from tests.contract.support import (
    ALL_CHECKS,
    AnyCase,
    Outcomes,
    fuzzing,
    load_schema,
    prepare_data_dir,
)
from tests.support.node import NodeProcess

TOKEN = "contract-admin-token-5e0c7d2a91"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
OUTCOMES = Outcomes()
schema = load_schema(admin=True)


@pytest.fixture(scope="module")
def live_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    node = NodeProcess(prepare_data_dir(tmp_path_factory.mktemp("admin-live-node")),
                       env={TOKEN_ENV: TOKEN})
    with node:
        yield node


@schema.parametrize()
@hypothesis.settings(max_examples=(fuzzing() or (40, 0))[0])
def test_admin_api_honours_the_contract_live(case: AnyCase, live_node: NodeProcess) -> None:
    response = case.call_and_validate(base_url=live_node.url, headers=HEADERS,
                                      checks=ALL_CHECKS)
    OUTCOMES.record(case, response)


def test_the_live_admin_run_got_past_the_token(live_node: NodeProcess) -> None:
    seen = OUTCOMES.seen
    if not seen:
        pytest.skip("the contract run did not execute (run the whole module)")
    assert seen["http-200"] > 0 and seen["http-401"] > 0, seen
    assert "http-500" not in seen, seen
    assert live_node.events("admin.internal_error") == []
    assert all(TOKEN not in line for line in live_node.lines)
    assert live_node.proc is not None and live_node.proc.poll() is None  # still serving
