"""Schemathesis on the admin API (tag `admin`), in process, with the operator's admin token.

A node of its own (the run changes its settings and catalog), built from the same data dir as
the other contract runs; its admin token is the one it generated into `admin.token`, read from
there as an operator would. Every check is on: `ignored_auth` probes each operation without and
with a wrong token, negative data must be refused with 4xx, and the stateful phase follows the
spec's links from a created peer to reading, replacing and deleting it.

Positive data can be refused with 400 by the three writes (see schemathesis.toml: a setting's
range depends on the path, a port may be invalid); everything else about them must hold.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from jsonschema import Draft202012Validator
from schemathesis.specs.openapi.checks import negative_data_rejection, use_after_free

from synthorg.admin.token import TOKEN_FILENAME
from synthorg.contract.spec import all_definitions, bundled_openapi
from synthorg.node import Node
from tests.contract.support import (
    ALL_CHECKS,
    PEER,
    SECRET,
    STATEFUL_SETTINGS,
    AnyCase,
    DeferredApp,
    Outcomes,
    load_schema,
    prepare_data_dir,
)

OUTCOMES = Outcomes()
ADMIN_PREFIX = "/api/v1/admin/"
PEER_ENDPOINT = "http://127.0.0.1:9"  # as prepare_data_dir writes it
SETTING_PATH = "/api/v1/admin/settings/{name}"


class AdminApp(DeferredApp):
    """The node's ASGI app, set by the fixture; it also knows the token the node generated."""

    def __init__(self) -> None:
        super().__init__()
        self.node: Node | None = None
        self.headers: dict[str, str] = {}

    def restore(self) -> None:
        """Put the node's catalog and settings back as prepare_data_dir left them."""
        assert self.node is not None
        catalog = self.node.catalog
        for record in catalog.list():
            if record.name != PEER:
                catalog.remove(record.name)
        catalog.put(PEER, PEER_ENDPOINT, "api_key", SECRET)
        for view in self.node.settings.all():
            self.node.settings.reset(view.definition.name)


APP = AdminApp()
schema = load_schema(admin=True)
schema.app = APP


@pytest.fixture(scope="module", autouse=True)
def admin_node(tmp_path_factory: pytest.TempPathFactory,
               monkeypatch_module: pytest.MonkeyPatch) -> Iterator[Node]:
    monkeypatch_module.delenv("SYNTHORG_ADMIN_TOKEN", raising=False)
    data_dir = prepare_data_dir(tmp_path_factory.mktemp("admin-node"))
    node = Node.build(data_dir)
    APP.node = node
    token = (data_dir / TOKEN_FILENAME).read_text().strip()
    APP.headers = {"Authorization": f"Bearer {token}"}
    APP.target = node.app()
    yield node
    node.close()


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@schema.parametrize()
def test_admin_api_honours_the_contract(case: AnyCase) -> None:
    response = case.call_and_validate(headers=APP.headers, checks=checks_for(case))
    OUTCOMES.record(case, response)


def checks_for(case: AnyCase) -> list[Any]:
    """Every check, except `use_after_free` on a setting: DELETE resets a setting (the runtime
    write goes; config.yaml's value or the default applies again) and the setting stays
    readable, as documented (schemathesis.toml says the same for command-line runs; explicit
    check lists bypass that configuration)."""
    if case.operation.path == SETTING_PATH:
        return [check for check in ALL_CHECKS if check is not use_after_free]
    if case.operation.query and query_conforms(case):
        # A negative case whose mutations were the Authorization header (which the run
        # replaces with the operator's token) and query parameters that were never sent (an
        # extra one without a value) reaches the node as a valid request: 200 is right.
        return [check for check in ALL_CHECKS if check is not negative_data_rejection]
    if case.body is not None and not case.operation.query and body_conforms(case):
        # The same with a body: a stateful step fills a field it mutated from an earlier
        # answer (the peer's `binding: null`), so the body sent is valid after all.
        return [check for check in ALL_CHECKS if check is not negative_data_rejection]
    return ALL_CHECKS


def body_conforms(case: AnyCase) -> bool:
    """Whether the JSON body sent is one the operation declares (its schema's references
    resolved in the bundled spec)."""
    document = bundled_openapi()
    operation = document["paths"].get(case.operation.path, {}).get(case.method.lower(), {})
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if content is None:
        return False
    schema = {**content["schema"], "components": document["components"]}
    return bool(Draft202012Validator(schema).is_valid(case.body))


def query_conforms(case: AnyCase) -> bool:
    """Whether every query parameter sent is one the operation declares, with a valid value."""
    declared = {p.definition["name"]: p.definition for p in case.operation.query}
    for name, value in (case.query or {}).items():
        if value is None or value == []:
            continue  # not sent: the client writes no parameter for either
        definition = declared.get(name)
        if definition is None:
            return False
        schema = resolved_schema(definition.get("schema", {}))
        if schema is None or not Draft202012Validator(schema).is_valid(value):
            return False
    return True


def resolved_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The parameter's schema with its reference resolved from the bundled spec (None when
    it cannot be)."""
    ref = schema.get("$ref")
    if ref is None:
        return schema
    name = str(ref).rsplit("/", 1)[-1]
    found = all_definitions().get(name)
    return None if found is None else found[1]


class AdminWorkflow(schema.as_state_machine()):  # type: ignore[misc]
    """Stateful: create a peer, then read, replace and delete it along the spec's links. Each
    scenario starts from the same catalog and settings, so the same steps get the same answers
    (hypothesis replays scenarios and insists on that)."""

    def setup(self) -> None:
        APP.restore()

    def get_call_kwargs(self, case: AnyCase) -> dict[str, Any]:
        return {"headers": APP.headers}

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
            checks=checks_for(case),
            headers=APP.headers,
            transport_kwargs=kwargs,
            recorder=getattr(self, "recorder", None),
        )


TestAdminWorkflow = AdminWorkflow.TestCase
TestAdminWorkflow.settings = STATEFUL_SETTINGS


def test_the_admin_run_reached_every_outcome() -> None:
    """The run was not all stopped at the token or at validation: writes were applied,
    peers created and deleted, and each refusal the spec documents came back."""
    seen = OUTCOMES.seen
    if not seen:
        pytest.skip("the contract run did not execute (run the whole module)")
    for label in (
        "PUT /api/v1/admin/settings/{name}: http-200",
        "PUT /api/v1/admin/settings/{name}: http-400",
        "DELETE /api/v1/admin/settings/{name}: http-200",
        "POST /api/v1/admin/peers: http-201",
        "POST /api/v1/admin/peers: http-400",
        "GET /api/v1/admin/peers/{name}: http-200",
        "GET /api/v1/admin/peers/{name}: http-404",
        "PUT /api/v1/admin/peers/{name}: http-200",
        "DELETE /api/v1/admin/peers/{name}: http-204",
        "GET /api/v1/admin/status: http-200",
    ):
        assert seen[label] > 0, (label, seen)
    assert "http-500" not in seen, seen
    operations = {
        f"{method.upper()} {path}"
        for path, item in bundled_openapi()["paths"].items()
        for method in item
        if method != "parameters"
    }
    exercised = {label.split(": ")[0] for label in seen if ": " in label}
    assert exercised == {op for op in operations if op.split(" ")[1].startswith(ADMIN_PREFIX)}
