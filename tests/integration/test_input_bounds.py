"""The spec's input bounds (1.1.0) against a live node at the default body limit (1 MiB).

Each case sends one input one step past a bound, answered -32602 with `data.errors` naming
where (the input itself never echoed), and the same input at the bound, accepted and kept as
it was sent. The bounds (spec/schemas/a2a.json): file bytes are standard base64; a file uri is
http or https; Metadata has names <= 256 characters, strings <= 4096, 64 members then 16 then 8
entries, four levels; Data (a data part's content) has strings <= 65536, 256 members then 64,
16 and 8 entries, five levels.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.conftest import api_key_headers, peer_client
from tests.integration.helpers import (
    INVALID_PARAMS,
    call,
    expect_error,
    expect_result,
    message,
    unique,
    validation_errors,
)
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

PEER, KEY = "peer-bounds", "key-bounds-3c9e1a7f5b2d"
DELEGATION_LOOP = -32030
MARKER = "ZZ-BOUNDS-MARKER-8812"
CONFIG = f"""\
a2a:
  enabled: true
  node_name: node-bounds
  allowed_peers: [{PEER}]
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
"""
PART = ["message", "parts", 0]
FILE_BYTES = [*PART, "file", "file", "FileWithBytes", "bytes"]
FILE_URI = [*PART, "file", "file", "FileWithUri", "uri"]
METADATA = ["message", "metadata"]
DATA = [*PART, "data", "data"]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir: Path = tmp_path_factory.mktemp("bounds")
    add_peer(data_dir, PEER, KEY)
    with LiveNode(data_dir, CONFIG) as running:
        yield running


@pytest.fixture(scope="module")
def client(node: LiveNode) -> Iterator[httpx.Client]:
    with peer_client(node, api_key_headers(PEER, KEY)) as peer:
        yield peer


def nested(depth: int, leaf: Any, key: str = "k") -> Any:
    for _ in range(depth):
        leaf = {key: leaf}
    return leaf


def with_part(part: dict[str, Any]) -> dict[str, Any]:
    return {"message": message(parts=[part])}


def file_bytes(value: str) -> dict[str, Any]:
    return with_part({"kind": "file", "file": {"bytes": value, "name": "a.bin"}})


def file_uri(value: str) -> dict[str, Any]:
    return with_part({"kind": "file", "file": {"uri": value}})


def data(value: dict[str, Any]) -> dict[str, Any]:
    return with_part({"kind": "data", "data": value})


def metadata(value: dict[str, Any]) -> dict[str, Any]:
    return {"message": message(metadata=value)}


def members(count: int, value: Any = 1) -> dict[str, Any]:
    return {f"m{i}": value for i in range(count)}


# (good params, bad params, an issue of the bad one: (loc, type))
CASES = [
    pytest.param(
        file_bytes("aGVsbG8="),
        file_bytes(f"{MARKER}!"),
        (FILE_BYTES, "string_pattern_mismatch"),
        id="bytes-not-base64",
    ),
    pytest.param(
        file_bytes("aGVsbG8="),
        file_bytes("aGVsbG8"),
        (FILE_BYTES, "string_pattern_mismatch"),
        id="bytes-missing-padding",
    ),
    pytest.param(
        file_bytes("aGk="),
        file_bytes("aGk=="),
        (FILE_BYTES, "string_pattern_mismatch"),
        id="bytes-extra-padding",
    ),
    pytest.param(
        file_bytes("+/+/"),
        file_bytes("-_-_"),
        (FILE_BYTES, "string_pattern_mismatch"),
        id="bytes-url-safe-alphabet",
    ),
    pytest.param(
        file_bytes("aGVsbG8="),
        file_bytes("aGVs\nbG8="),
        (FILE_BYTES, "string_pattern_mismatch"),
        id="bytes-line-break",
    ),
    pytest.param(
        file_uri("https://files.example/report.pdf"),
        file_uri(f"javascript:alert('{MARKER}')"),
        (FILE_URI, "string_pattern_mismatch"),
        id="uri-javascript",
    ),
    pytest.param(
        file_uri("HTTPS://FILES.EXAMPLE/REPORT.PDF"),
        file_uri("JAVASCRIPT:alert(1)"),
        (FILE_URI, "string_pattern_mismatch"),
        id="uri-javascript-upper-case",
    ),
    pytest.param(
        file_uri("http://files.example/etc/passwd"),
        file_uri("file:///etc/passwd"),
        (FILE_URI, "string_pattern_mismatch"),
        id="uri-file",
    ),
    pytest.param(
        file_bytes("aGk="),
        file_uri("data:text/plain;base64,aGk="),
        (FILE_URI, "string_pattern_mismatch"),
        id="uri-data",
    ),
    pytest.param(
        metadata({"note": "x" * 4096}),
        metadata({"note": MARKER * 200}),
        ([*METADATA, "*", "string"], "string_too_long"),
        id="metadata-string-over-4096",
    ),
    pytest.param(
        metadata({"k" * 256: 1}),
        metadata({MARKER * 13: 1}),
        ([*METADATA, "*", "[key]"], "string_too_long"),
        id="metadata-name-over-256",
    ),
    pytest.param(
        metadata({"a": {"b": [1, "x", None]}}),
        metadata({"a": {"b": [[1]]}}),
        ([*METADATA, "*", "object", "*", "array", 0], "json_type_not_allowed"),
        id="metadata-nested-one-level-too-deep",
    ),
    pytest.param(
        metadata({"labels": ["t"] * 16}),
        metadata({"labels": ["t"] * 17}),
        ([*METADATA, "*", "array"], "too_long"),
        id="metadata-array-over-16",
    ),
    pytest.param(
        metadata({"rows": [[0] * 8]}),
        metadata({"rows": [[0] * 9]}),
        ([*METADATA, "*", "array", 0, "array"], "too_long"),
        id="metadata-nested-array-over-8",
    ),
    pytest.param(
        metadata({"ext": members(16)}),
        metadata({"ext": members(17)}),
        ([*METADATA, "*", "object"], "too_long"),
        id="metadata-object-over-16-members",
    ),
    pytest.param(
        {"message": message(), "metadata": {"trace": {"span": members(8)}}},
        {"message": message(), "metadata": {"trace": {"span": members(9)}}},
        (["metadata", "*", "object", "*", "object"], "too_long"),
        id="params-metadata-nested-object-over-8-members",
    ),
    pytest.param(
        with_part({"kind": "text", "text": "t", "metadata": {"note": "x" * 4096}}),
        with_part({"kind": "text", "text": "t", "metadata": {"note": "x" * 4097}}),
        ([*PART, "text", "metadata", "*", "string"], "string_too_long"),
        id="part-metadata-string-over-4096",
    ),
    pytest.param(
        data({"doc": "x" * 65536}),
        data({"doc": "x" * 65537}),
        ([*DATA, "*", "string"], "string_too_long"),
        id="data-string-over-65536",
    ),
    pytest.param(
        data(nested(3, [1, 2.5, True, None, "x"])),
        data(nested(3, [[1]])),
        ([*DATA, *["*", "object"] * 2, "*", "array", 0], "json_type_not_allowed"),
        id="data-nested-one-level-too-deep",
    ),
    pytest.param(
        data({"rows": list(range(64))}),
        data({"rows": list(range(65))}),
        ([*DATA, "*", "array"], "too_long"),
        id="data-array-over-64",
    ),
    pytest.param(
        data({"rows": [list(range(16))]}),
        data({"rows": [list(range(17))]}),
        ([*DATA, "*", "array", 0, "array"], "too_long"),
        id="data-nested-array-over-16",
    ),
    pytest.param(
        data({"rows": [[list(range(8))]]}),
        data({"rows": [[list(range(9))]]}),
        ([*DATA, "*", "array", 0, "array", 0, "array"], "too_long"),
        id="data-nested-array-over-8",
    ),
    pytest.param(
        data({"row": members(64)}),
        data({"row": members(65)}),
        ([*DATA, "*", "object"], "too_long"),
        id="data-object-over-64-members",
    ),
    pytest.param(
        data(nested(2, members(16))),
        data(nested(2, members(17))),
        ([*DATA, "*", "object", "*", "object"], "too_long"),
        id="data-nested-object-over-16-members",
    ),
    pytest.param(
        data({"k" * 256: 1}),
        data({"k" * 257: 1}),
        ([*DATA, "*", "[key]"], "string_too_long"),
        id="data-name-over-256",
    ),
]


# The member counts of the outermost objects, which spec 1.0.0 already bounded.
OUTER_COUNTS = [
    pytest.param(
        metadata(members(64)),
        metadata(members(65)),
        (METADATA, "too_long"),
        id="metadata-over-64-members",
    ),
    pytest.param(
        data(members(256)),
        data(members(257)),
        (DATA, "too_long"),
        id="data-over-256-members",
    ),
]


@pytest.mark.parametrize(("good", "bad", "issue"), [*CASES, *OUTER_COUNTS])
def test_one_step_past_a_bound_is_invalid_params_and_at_it_is_accepted(
    client: httpx.Client, good: dict[str, Any], bad: dict[str, Any], issue: tuple[list[Any], str]
) -> None:
    response = call(client, "message/send", bad, "past")
    issues = validation_errors(expect_error(response, code=INVALID_PARAMS, request_id="past"))
    assert issue in [(found["loc"], found["type"]) for found in issues], issues
    assert MARKER not in response.text

    task = expect_result(call(client, "message/send", good, "at"), request_id="at")
    assert task["status"]["state"] == "completed"
    kept = task["history"][0]
    sent = good["message"]
    assert kept["parts"] == sent["parts"]  # numbers keep their type: 1 stays 1, not 1.0
    assert kept.get("metadata") == sent.get("metadata")


def test_task_methods_bound_their_metadata_too(client: httpx.Client) -> None:
    task = expect_result(call(client, "message/send", {"message": message()}))
    for method in ("tasks/get", "tasks/cancel"):
        params = {"id": task["id"], "metadata": {"note": "x" * 4097}}
        error = expect_error(call(client, method, params, 2), code=INVALID_PARAMS, request_id=2)
        assert (["metadata", "*", "string"], "string_too_long") in [
            (found["loc"], found["type"]) for found in validation_errors(error)
        ]
    params = {"id": task["id"], "metadata": {"note": "x" * 4096}}
    assert expect_result(call(client, "tasks/get", params, 3), request_id=3)["id"] == task["id"]


def test_the_metadata_the_node_writes_fits_its_bounds(client: httpx.Client) -> None:
    """`synthorg.visited` at the hop limit (8 longest peer names) passes the bounds and meets
    the loop rule (-32030), not -32602; one name fewer is a plain message."""
    names = [f"{i}{'p' * 62}" for i in range(8)]
    full = message(metadata={"agentId": "echo", "synthorg.visited": names})
    looped = call(client, "message/send", {"message": full})
    expect_error(looped, code=DELEGATION_LOOP, request_id=1)
    fewer = message(metadata={"agentId": "echo", "synthorg.visited": names[:7]})
    task = expect_result(call(client, "message/send", {"message": fewer}))
    assert task["history"][0]["metadata"]["synthorg.visited"] == names[:7]
    assert task["metadata"] == {"agentId": "echo"}


def test_a_bound_refusal_stores_nothing(client: httpx.Client) -> None:
    """The refused message is not a task: its messageId is free for a valid message."""
    message_id = unique("bounds")
    bad = message(message_id=message_id, metadata={"note": "x" * 4097})
    expect_error(call(client, "message/send", {"message": bad}), code=INVALID_PARAMS, request_id=1)
    good = message(message_id=message_id, metadata={"note": "x" * 4096})
    assert expect_result(call(client, "message/send", {"message": good}))["status"]["state"] == (
        "completed"
    )
