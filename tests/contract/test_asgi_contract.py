"""Schemathesis, in process: the ASGI app of a real node (SQLite in a temp dir), every check on.

Examples, coverage (incl. negative data and unexpected methods) and fuzzing phases run through
`@schema.parametrize()`; the peer's real credentials (X-API-Key) are sent with every case, and
`ignored_auth` probes the same call without and with wrong credentials.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis

from synthorg.node import Node
from tests.contract.support import (
    ALL_CHECKS,
    EXPECTED_CHECKS,
    PEER,
    SECRET,
    STATEFUL_SETTINGS,
    AnyCase,
    DeferredApp,
    Outcomes,
    load_schema,
    prepare_data_dir,
    stateful_checks,
)

HEADERS = {"X-A2A-Peer-Name": PEER, "X-API-Key": SECRET}
OUTCOMES = Outcomes()


APP = DeferredApp()
schema = load_schema()
schema.app = APP  # calls go to the ASGI app in process, no socket


@pytest.fixture(scope="module", autouse=True)
def asgi_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    node = Node.build(prepare_data_dir(tmp_path_factory.mktemp("asgi-node")))
    APP.target = node.app()
    yield node
    node.close()


def test_every_check_is_enabled() -> None:
    assert {getattr(check, "__name__", "") for check in ALL_CHECKS} == EXPECTED_CHECKS


def test_the_spec_loads_with_the_rpc_operation() -> None:
    ids = [
        result.ok().definition.raw.get("operationId")  # type: ignore[union-attr]
        for result in schema.get_all_operations()
    ]
    assert "gateway.rpc" in ids


@schema.parametrize()
def test_api_honours_the_contract_in_process(case: AnyCase) -> None:
    response = case.call_and_validate(headers=HEADERS, checks=ALL_CHECKS)
    OUTCOMES.record(case, response)


class InProcessWorkflow(schema.as_state_machine()):  # type: ignore[misc]
    """The stateful phase: chains operations along the links Schemathesis infers from the
    spec (the company card's agents feed the agent cards and the per-agent endpoints)."""

    def get_call_kwargs(self, case: AnyCase) -> dict[str, Any]:
        return {"headers": HEADERS}

    def validate_response(
        self,
        response: schemathesis.Response,
        case: AnyCase,
        additional_checks: list[Any] | None = None,
        **kwargs: Any,
    ) -> None:
        OUTCOMES.record(case, response)
        case.validate_response(
            response,
            checks=stateful_checks(case, ALL_CHECKS),
            headers=HEADERS,
            transport_kwargs=kwargs,
            recorder=getattr(self, "recorder", None),
        )


TestInProcessWorkflow = InProcessWorkflow.TestCase
TestInProcessWorkflow.settings = STATEFUL_SETTINGS


def test_the_in_process_run_reached_every_layer() -> None:
    """The fuzzing was not all stopped at one gate: tasks were created, errors of each JSON-RPC
    layer came back, and unexpected methods were refused."""
    seen = OUTCOMES.seen
    if not seen:
        pytest.skip("the contract run did not execute (run the whole module)")
    assert seen["result-task"] > 0, seen
    for label in ("error-32602", "http-405"):
        assert seen[label] > 0, seen
    assert "http-500" not in seen, seen
    # 1.0 requests went out with proto field names too, and some got past the params check to
    # the operation itself (a result, or its own answer such as -32001 for an unknown task).
    # That every 1.0 operation answers in either spelling is test_v1_input_live's, case by case.
    prefix = "proto-names: "
    proto = [label.removeprefix(prefix) for label in seen if label.startswith(prefix)]
    assert any(label.startswith(("result", "error-3200")) for label in proto), seen


def test_data_dir_is_private(asgi_node: Node) -> None:
    assert (Path(asgi_node.data_dir) / "synthorg.db").stat().st_mode & 0o077 == 0
