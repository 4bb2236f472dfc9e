"""compare_specs on modified copies of our own contract, as a peer might publish them."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from synthorg.contract.compat import (
    OPTIONAL_METHODS,
    RESULTS,
    CompatReport,
    Finding,
    MethodCompat,
    SpecShapeError,
    compare_specs,
    render_table,
)
from synthorg.contract.spec import bundled_openapi

OURS_DOCUMENT = bundled_openapi()
OURS = OURS_DOCUMENT["info"]["version"]
CORE = ("message/send", "tasks/get", "tasks/cancel")
V1_METHODS = (
    "SendMessage", "GetTask", "CancelTask", "ListTasks", "GetExtendedAgentCard",
    "SendStreamingMessage", "SubscribeToTask", "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
)
EXTENDED_CARD = "agent/getAuthenticatedExtendedCard"
PUSH_METHODS = tuple(
    f"tasks/pushNotificationConfig/{verb}" for verb in ("set", "get", "list", "delete")
)
WE_REJECT = "the peer may send it; we reject unknown members"


def peer(change: Callable[[dict[str, Any]], object] | None = None) -> dict[str, Any]:
    document = copy.deepcopy(OURS_DOCUMENT)
    if change is not None:
        change(document)
    return document


def schemas(document: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = document["components"]["schemas"]
    return found


def check(document: dict[str, Any]) -> CompatReport:
    return compare_specs(OURS_DOCUMENT, document)


def method(report: CompatReport, name: str) -> MethodCompat:
    return next(m for m in report.methods if m.method == name)


def messages(findings: list[Finding]) -> list[tuple[str, str, str]]:
    return [(f.severity, f.where, f.message) for f in findings]


def drop_method(document: dict[str, Any], name: str) -> None:
    union = schemas(document)["JsonRpcRequest"]
    union["oneOf"] = [
        v
        for v in union["oneOf"]
        if schemas(document)[v["$ref"].rsplit("/", 1)[-1]]["properties"]["method"]["const"] != name
    ]


# -- the baseline ----------------------------------------------------------------------------


def test_our_own_contract_is_compatible_with_itself() -> None:
    report = check(peer())
    assert report.compatible and not report.has_warnings
    assert report.verdict == "compatible"
    assert [m.method for m in report.methods] == [
        *CORE, "message/stream", "tasks/resubscribe", *PUSH_METHODS, "skills/query",
        "skills/negotiate", *V1_METHODS[:4], EXTENDED_CARD, *V1_METHODS[4:],
    ]
    for entry in report.methods:
        assert entry.offered and entry.findings == []
        assert (entry.request_status, entry.result_status) == ("ok", "ok")
    assert report.peer_only == []


def test_every_method_of_ours_has_a_known_result() -> None:
    """A new method in the spec needs an entry in compat.RESULTS (the spec cannot say it)."""
    methods = [m.method for m in check(peer()).methods]
    assert sorted(RESULTS) == sorted(methods)
    union = [
        *schemas(OURS_DOCUMENT)["RpcResult"]["oneOf"],
        *schemas(OURS_DOCUMENT)["V1RpcResult"]["oneOf"],
    ]
    result_names = {v["$ref"].rsplit("/", 1)[-1] for v in union}
    # A Task is one kind of StreamEvent (the union's own variants are results too).
    events = schemas(OURS_DOCUMENT)["StreamEvent"]["oneOf"]
    result_names |= {v["$ref"].rsplit("/", 1)[-1] for v in events}
    # A union of results (message/send's Task or direct Message) is a result too.
    result_names |= {
        name for name, s in schemas(OURS_DOCUMENT).items()
        if s.get("oneOf") and {v.get("$ref", "").rsplit("/", 1)[-1] for v in s["oneOf"]}
        <= result_names
    }
    assert set(RESULTS.values()) <= result_names
    assert set(methods) >= OPTIONAL_METHODS


# -- methods ---------------------------------------------------------------------------------


def test_a_peer_without_skills_negotiate_is_compatible_with_a_warning() -> None:
    report = check(peer(lambda d: drop_method(d, "skills/negotiate")))
    entry = method(report, "skills/negotiate")
    assert not entry.offered
    assert (entry.request_status, entry.result_status, entry.status) == ("-", "-", "warning")
    assert messages(entry.findings) == [
        (
            "warning",
            "",
            "the peer's spec does not offer it (an optional SynthOrg extension method: "
            "delegation is unaffected)",
        )
    ]
    assert report.compatible and report.has_warnings
    assert report.verdict == "compatible, with warnings"
    assert all(method(report, m).status == "ok" for m in CORE)


def test_a_peer_without_a_core_method_is_incompatible() -> None:
    report = check(peer(lambda d: drop_method(d, "tasks/cancel")))
    entry = method(report, "tasks/cancel")
    assert not entry.offered and entry.status == "incompatible"
    assert messages(entry.findings) == [("error", "", "the peer's spec does not offer it")]
    assert not report.compatible


def test_methods_only_the_peer_has_are_listed() -> None:
    def add(document: dict[str, Any]) -> None:
        extra = copy.deepcopy(schemas(document)["TasksGetRequest"])
        extra["properties"]["method"] = {"const": "tasks/list"}
        schemas(document)["TasksListRequest"] = extra
        schemas(document)["JsonRpcRequest"]["oneOf"].append(
            {"$ref": "#/components/schemas/TasksListRequest"}
        )

    report = check(peer(add))
    assert report.peer_only == ["tasks/list"]
    assert report.compatible and not report.has_warnings


def test_a_generic_envelope_with_a_params_union_is_understood() -> None:
    """A peer may describe one envelope (`method`: any string) and a params union keyed by
    each params' `method` const, as our RpcParams is."""

    def generic(document: dict[str, Any]) -> None:
        schemas(document)["JsonRpcRequest"] = {
            "type": "object",
            "additionalProperties": False,
            "required": ["jsonrpc", "id", "method", "params"],
            "properties": {
                "jsonrpc": {"const": "2.0"},
                "id": {"$ref": "#/components/schemas/RequestId"},
                "method": {"type": "string"},
                "params": {"$ref": "#/components/schemas/RpcParams"},
            },
        }

    report = check(peer(generic))
    offered = [m.method for m in report.methods if m.offered]
    assert offered == [  # the 0.3 union only
        *CORE, "message/stream", "tasks/resubscribe", *PUSH_METHODS, "skills/query",
        "skills/negotiate", EXTENDED_CARD,
    ]
    assert report.compatible


# -- results ---------------------------------------------------------------------------------


def test_a_peer_whose_task_lacks_context_id_is_incompatible() -> None:
    def change(document: dict[str, Any]) -> None:
        task = schemas(document)["Task"]
        del task["properties"]["contextId"]
        task["required"].remove("contextId")

    report = check(peer(change))
    for name in CORE:
        entry = method(report, name)
        assert entry.request_status == "ok"
        if name == "message/send":  # the peer may still answer with a direct Message
            assert entry.result_status == "warning"
            continue
        assert entry.result_status == "incompatible"
        assert messages(entry.result) == [
            ("error", "result.contextId", "we require it; the peer's schema never has it")
        ]
    assert method(report, "skills/query").status == "ok"
    assert not report.compatible


def test_a_peer_whose_task_makes_context_id_optional_gets_a_warning() -> None:
    report = check(peer(lambda d: schemas(d)["Task"]["required"].remove("contextId")))
    assert messages(method(report, "tasks/get").result) == [
        ("warning", "result.contextId", "we require it; the peer's schema makes it optional")
    ]
    assert report.compatible


def test_a_peer_that_adds_optional_fields_is_compatible() -> None:
    def change(document: dict[str, Any]) -> None:
        schemas(document)["TasksGetParams"]["properties"]["includeArtifacts"] = {"type": "boolean"}
        schemas(document)["MessageSendParams"]["properties"]["priority"] = {"type": "integer"}

    report = check(peer(change))
    assert report.compatible and not report.has_warnings


def test_an_optional_field_in_an_object_the_peer_also_returns_is_compatible() -> None:
    """Message is sent (params.message) and read back (the task's history and status)."""
    report = check(
        peer(lambda d: schemas(d)["Message"]["properties"].update(priority={"type": "integer"}))
    )
    assert report.compatible
    entry = method(report, "message/send")
    assert entry.request == []
    assert messages(entry.result) == [
        ("warning", "result.status.message.priority", WE_REJECT),
        ("warning", "result.history[].priority", WE_REJECT),
        ("warning", "result.priority", WE_REJECT),  # a direct Message reply
    ]


def test_a_peer_whose_result_may_carry_a_member_we_do_not_know_gets_a_warning() -> None:
    """Our models are strict (unknown keys rejected), so the call fails when it is sent."""
    report = check(
        peer(lambda d: schemas(d)["Task"]["properties"].update(priority={"type": "integer"}))
    )
    assert messages(method(report, "message/send").result) == [
        ("warning", "result.priority", "the peer may send it; we reject unknown members")
    ]
    assert report.compatible


def test_a_result_member_the_peer_always_sends_and_we_reject_is_an_error() -> None:
    def change(document: dict[str, Any]) -> None:
        result = schemas(document)["SkillsQueryResult"]
        result["properties"]["total"] = {"type": "integer"}
        result["required"].append("total")

    report = check(peer(change))
    assert messages(method(report, "skills/query").result) == [
        ("error", "result.total", "the peer always sends it; we reject unknown members")
    ]


def test_a_narrower_result_enum_is_fine_and_a_wider_one_is_flagged() -> None:
    narrower = check(peer(lambda d: schemas(d)["TaskState"]["enum"].remove("unknown")))
    assert narrower.compatible and not narrower.has_warnings  # we read every value it sends
    wider = check(peer(lambda d: schemas(d)["TaskState"]["enum"].append("paused")))
    findings = messages(method(wider, "tasks/get").result)
    assert ("warning", "result.status.state", 'we do not accept "paused"') in findings
    assert wider.compatible


def test_a_result_type_change_is_incompatible() -> None:
    report = check(
        peer(lambda d: schemas(d)["TaskStatus"]["properties"].update(state={"type": "integer"}))
    )
    assert (
        "error",
        "result.status.state",
        "the peer sends integer; we accept only string",
    ) in messages(method(report, "tasks/cancel").result)
    assert not report.compatible


def test_a_missing_result_definition_is_incompatible() -> None:
    def change(document: dict[str, Any]) -> None:
        union = schemas(document)["RpcResult"]
        union["oneOf"] = [v for v in union["oneOf"] if not v["$ref"].endswith("/SkillsQueryResult")]
        del schemas(document)["SkillsQueryResult"]

    report = check(peer(change))
    assert messages(method(report, "skills/query").result) == [
        ("error", "result", "the peer's spec has no SkillsQueryResult result for this method")
    ]


# -- requests --------------------------------------------------------------------------------


def test_a_peer_that_requires_a_param_we_never_send_is_incompatible() -> None:
    def change(document: dict[str, Any]) -> None:
        params = schemas(document)["TasksCancelParams"]
        params["properties"]["reason"] = {"type": "string"}
        params["required"].append("reason")

    report = check(peer(change))
    assert messages(method(report, "tasks/cancel").request) == [
        ("error", "params.reason", "the peer requires it; our schema never has it")
    ]
    assert method(report, "tasks/cancel").request_status == "incompatible"


def test_a_peer_that_requires_a_param_we_send_only_sometimes_gets_a_warning() -> None:
    report = check(peer(lambda d: schemas(d)["TasksGetParams"]["required"].append("historyLength")))
    assert messages(method(report, "tasks/get").request) == [
        ("warning", "params.historyLength", "the peer requires it; our schema makes it optional")
    ]


def test_a_closed_peer_schema_without_a_member_we_may_send_gets_a_warning() -> None:
    report = check(peer(lambda d: schemas(d)["TasksGetParams"]["properties"].pop("historyLength")))
    assert messages(method(report, "tasks/get").request) == [
        ("warning", "params.historyLength", "we may send it; the peer rejects unknown members")
    ]


def test_a_closed_peer_schema_without_a_member_we_always_send_is_incompatible() -> None:
    def change(document: dict[str, Any]) -> None:
        del schemas(document)["Message"]["properties"]["messageId"]
        schemas(document)["Message"]["required"].remove("messageId")

    report = check(peer(change))
    assert (
        "error",
        "params.message.messageId",
        "we always send it; the peer rejects unknown members",
    ) in messages(method(report, "message/send").request)


def test_enum_overlap_in_requests() -> None:
    partial = check(peer(lambda d: schemas(d)["Role"].update(enum=["user"])))
    assert ("warning", "params.message.role", 'the peer does not accept "agent"') in messages(
        method(partial, "message/send").request
    )
    assert partial.compatible
    disjoint = check(peer(lambda d: schemas(d)["Role"].update(enum=["human"])))
    assert (
        "error",
        "params.message.role",
        'we send "agent", "user"; the peer accepts only "human"',
    ) in messages(method(disjoint, "message/send").request)
    assert not disjoint.compatible


def test_a_peer_with_a_different_const_for_the_method_does_not_offer_it() -> None:
    report = check(
        peer(
            lambda d: schemas(d)["TasksGetRequest"]["properties"].update(
                method={"const": "tasks/fetch"}
            )
        )
    )
    assert not method(report, "tasks/get").offered
    assert report.peer_only == ["tasks/fetch"]


def test_union_variants_the_peer_lacks() -> None:
    def no_file_parts(document: dict[str, Any]) -> None:
        schemas(document)["Part"]["oneOf"] = [
            v for v in schemas(document)["Part"]["oneOf"] if not v["$ref"].endswith("/FilePart")
        ]

    report = check(peer(no_file_parts))
    request = messages(method(report, "message/send").request)
    assert (
        "warning",
        "params.message.parts[]",
        'the peer does not accept the form kind="file"',
    ) in request
    assert report.compatible

    def text_only(document: dict[str, Any]) -> None:
        schemas(document)["Part"]["oneOf"] = [{"$ref": "#/components/schemas/FilePart"}]
        schemas(document)["FilePart"]["properties"]["kind"] = {"const": "blob"}

    worse = check(peer(text_only))
    assert not worse.compatible


def test_narrower_limits_are_warnings() -> None:
    report = check(peer(lambda d: schemas(d)["Parts"].update(maxItems=10)))
    assert (
        "warning",
        "params.message.parts",
        "the peer accepts at most 10 items; our schema allows up to 1000",
    ) in messages(method(report, "message/send").request)
    assert report.compatible


def test_a_peer_identifier_pattern_is_flagged() -> None:
    report = check(peer(lambda d: schemas(d)["Identifier"].update(pattern="^[0-9]+$")))
    assert any(
        f.where == "params.id" and "pattern ^[0-9]+$" in f.message
        for f in method(report, "tasks/get").request
    )


# -- documents -------------------------------------------------------------------------------


def test_a_different_major_version_is_a_warning() -> None:
    other = f"{int(OURS.split('.')[0]) + 1}.0.0"
    report = check(peer(lambda d: d["info"].update(version=other)))
    assert messages(report.general) == [
        (
            "warning",
            "",
            f"the peer's contract is version {other}, ours {OURS}: a different major version",
        )
    ]


def test_a_document_without_our_rpc_path_is_incompatible() -> None:
    report = check(peer(lambda d: d["paths"].pop("/api/v1/a2a/")))
    assert messages(report.general) == [
        ("error", "", "the peer's spec has no POST /api/v1/a2a/ operation")
    ]
    assert not any(m.offered for m in report.methods)
    assert not report.compatible


def test_an_unresolvable_reference_is_reported_not_raised() -> None:
    report = check(
        peer(
            lambda d: schemas(d)["Task"]["properties"].update(
                id={"$ref": "https://elsewhere.example/task.json#/id"}
            )
        )
    )
    assert (
        "error",
        "result.id",
        "cannot resolve the peer's $ref 'https://elsewhere.example/task.json#/id'",
    ) in messages(method(report, "tasks/get").result)


@pytest.mark.parametrize("document", [[], "openapi", {"swagger": "2.0"}, {"openapi": 3}])
def test_not_an_openapi_3_document(document: Any) -> None:
    with pytest.raises(SpecShapeError):
        compare_specs(OURS_DOCUMENT, document)


def test_recursive_schemas_terminate() -> None:
    def loop(document: dict[str, Any]) -> None:
        schemas(document)["Message"]["properties"]["replyTo"] = {
            "$ref": "#/components/schemas/Message"
        }

    assert check(peer(loop)).compatible


def squeeze(line: str) -> str:
    return " ".join(line.split())


def test_the_table() -> None:
    report = check(
        peer(
            lambda d: (
                drop_method(d, "skills/negotiate"),
                schemas(d)["Task"]["required"].remove("contextId"),
            )
        )
    )
    text = render_table(report, "http://peer/openapi.json")
    # Columns widen to the longest method name (agent/getAuthenticatedExtendedCard).
    expected = [
        f"peer:  SynthOrg A2A federation gateway {OURS} (http://peer/openapi.json)",
        f"ours:  SynthOrg A2A federation gateway {OURS}",
        "",
        "method             offered        request  result",
        "message/send       yes            ok       warning",
        "tasks/get          yes            ok       warning",
        "tasks/cancel       yes            ok       warning",
        "message/stream     yes            ok       warning",
        "tasks/resubscribe  yes            ok       warning",
        *(f"{method} yes ok ok" for method in PUSH_METHODS),
        "skills/query       yes            ok       ok",
        "skills/negotiate   no (optional)  -        -",
    ]
    assert [squeeze(line) for line in text.splitlines()[:15]] == [squeeze(x) for x in expected]
    assert (
        "  warning: tasks/get result.contextId: we require it; the peer's schema makes it "
        "optional" in text
    )
    assert text.endswith("verdict: compatible, with warnings")
    as_json = report.as_dict()
    assert as_json["compatible"] is True
    by_method = {m["method"]: m for m in as_json["methods"]}
    assert by_method["skills/negotiate"]["offered"] is False


# -- the CLI: synthorg-a2a spec [check] -------------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from synthorg.cli.main import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, document: Any, name: str = "peer.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document) if name.endswith(".json") else yaml.safe_dump(document))
    return str(path)


def test_cli_prints_the_spec(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "spec")
    assert code == 0 and json.loads(out) == OURS_DOCUMENT
    code, out, _ = run_cli(capsys, "spec", "--format", "yaml")
    assert code == 0 and yaml.safe_load(out) == OURS_DOCUMENT


def test_cli_check_exit_codes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run_cli(capsys, "spec", "check", write(tmp_path, peer()))
    assert code == 0 and out.rstrip().endswith("verdict: compatible")

    no_skills = write(tmp_path, peer(lambda d: drop_method(d, "skills/negotiate")), "p.yaml")
    code, out, _ = run_cli(capsys, "spec", "check", no_skills)
    assert code == 0 and "verdict: compatible, with warnings" in out
    code, _, _ = run_cli(capsys, "spec", "check", "--strict", no_skills)
    assert code == 1

    no_get = write(tmp_path, peer(lambda d: drop_method(d, "tasks/get")), "q.json")
    code, out, _ = run_cli(capsys, "spec", "check", "--json", no_get)
    report = json.loads(out)
    assert code == 1 and report["compatible"] is False and report["source"] == no_get
    assert [m["method"] for m in report["methods"] if not m["offered"]] == ["tasks/get"]


def test_cli_check_bad_targets(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text("{not: [valid")
    code, _, err = run_cli(capsys, "spec", "check", str(junk))
    assert code == 3 and "neither JSON nor YAML" in err
    code, _, err = run_cli(capsys, "spec", "check", write(tmp_path, {"swagger": "2.0"}))
    assert code == 3 and "not an OpenAPI 3 document" in err
    code, _, err = run_cli(capsys, "spec", "check", "Not A Peer!")
    assert code == 2 and "is not a URL, a file or a peer name" in err
    code, _, err = run_cli(capsys, "spec", "check", "ftp://x/openapi.json")
    assert code == 2 and "not an http(s) URL" in err
    data = tmp_path / "data"
    code, _, err = run_cli(capsys, "spec", "check", "ghost", "--data-dir", str(data))
    assert code == 2 and "not a URL, a file or a catalog peer" in err
    code, _, err = run_cli(capsys, "spec", "check", "--timeout", "0", "x")
    assert code == 2


def test_document_urls() -> None:
    from synthorg.cli.spec_cmd import document_url

    assert document_url("http://peer:8001") == "http://peer:8001/openapi.json"
    assert document_url("http://peer:8001/") == "http://peer:8001/openapi.json"
    assert (
        document_url("https://gw.example/synthorg/") == "https://gw.example/synthorg/openapi.json"
    )
    assert document_url("http://peer/openapi.yaml") == "http://peer/openapi.yaml"
    assert document_url("http://peer/spec/v1.JSON") == "http://peer/spec/v1.JSON"
