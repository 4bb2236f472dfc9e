"""Schemathesis against a live node: a real `python -m synthorg.api` process on an ephemeral
loopback port (tests/support/node.py), every check on.

The node does not serve its spec, so the schema is the bundled spec loaded from a dict and every
call goes to the node's URL. The peer authenticates with `Authorization: Bearer` here (its catalog
scheme is api_key, which accepts Bearer too); the in-process run covers X-API-Key.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.contract.support import (
    ALL_CHECKS,
    PEER,
    SECRET,
    AnyCase,
    Outcomes,
    load_schema,
    prepare_data_dir,
)
from tests.support.node import NodeProcess

HEADERS = {"X-A2A-Peer-Name": PEER, "Authorization": f"Bearer {SECRET}"}
OUTCOMES = Outcomes()
# The in-process run sends schemathesis.toml's examples through the same pipeline; this run is
# about the real server and transport in front of it, so a third of them is enough here.
LIVE_EXAMPLES = 50
schema = load_schema(max_examples=LIVE_EXAMPLES)


@pytest.fixture(scope="module")
def live_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    node = NodeProcess(prepare_data_dir(tmp_path_factory.mktemp("live-node")))
    with node:
        yield node


@schema.parametrize()
def test_api_honours_the_contract_live(case: AnyCase, live_node: NodeProcess) -> None:
    response = case.call_and_validate(base_url=live_node.url, headers=HEADERS, checks=ALL_CHECKS)
    OUTCOMES.record(case, response)


def test_the_live_run_reached_every_layer() -> None:
    seen = OUTCOMES.seen
    if not seen:
        pytest.skip("the contract run did not execute (run the whole module)")
    assert seen["result-task"] > 0, seen
    assert seen["error-32602"] > 0, seen
    assert seen["http-405"] > 0, seen
    assert "http-500" not in seen, seen


def test_the_live_node_logged_no_internal_error(live_node: NodeProcess) -> None:
    assert live_node.events("a2a.inbound.internal_error") == []
    assert live_node.proc is not None and live_node.proc.poll() is None  # still serving
