"""The gRPC binding's tables: every RPC of the vendored proto is a 1.0 method the node
serves, and every error the node answers has a gRPC status of its own; and its response
messages, built directly from the result's document, equal json_format's."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from synthorg.gateway import dialect
from synthorg.gateway.replies import RPC_ERRORS
from synthorg.generated.constants import INTERNAL_ERROR, PEER_NOT_ALLOWED, RATE_LIMITED
from synthorg.generated.grpc import a2a_pb2
from synthorg.grpc import messages
from synthorg.grpc.service import SERVICE
from synthorg.grpc.status import STATUS, status_of


def test_every_rpc_of_the_service_is_a_1_0_method_and_back() -> None:
    rpcs = {method.name for method in SERVICE.methods}
    assert rpcs == set(dialect.V1.routes)
    for method in SERVICE.methods:
        route = dialect.V1.routes[method.name]
        assert (route.stream is not None) == method.server_streaming


def test_every_error_the_handlers_raise_has_a_status() -> None:
    assert set(RPC_ERRORS.values()) <= set(STATUS)
    assert INTERNAL_ERROR in STATUS


def test_a_rate_limit_carries_retry_info_and_a_refusal_its_reason() -> None:
    code, _, trailer = status_of(RATE_LIMITED, retry_after=3)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert b"google.rpc.RetryInfo" in trailer[0][1]
    code, message, trailer = status_of(PEER_NOT_ALLOWED)
    assert code == grpc.StatusCode.PERMISSION_DENIED and message == PEER_NOT_ALLOWED.message
    assert b"PEER_NOT_ALLOWED" in trailer[0][1]


# -- the response message, built directly (messages.build) as json_format builds it --------

def _filled(descriptor: Descriptor, variant: int, depth: int = 0) -> dict[str, Any]:
    """A ProtoJSON document setting every field of the message (for each oneof, its member
    `variant` modulo their number), nested messages down to a few levels."""
    document: dict[str, Any] = {}
    for field in descriptor.fields:
        oneof = field.containing_oneof
        if oneof is not None and oneof.fields[variant % len(oneof.fields)] is not field:
            continue
        value = _value_of(field, variant, depth)
        if value is None:
            continue
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            document[field.json_name] = {"k1": value, "k2": value}
        elif field.is_repeated:
            document[field.json_name] = [value, value]
        else:
            document[field.json_name] = value
    return document


def _value_of(field: FieldDescriptor, variant: int, depth: int) -> Any:
    message = field.message_type
    if message is not None and message.GetOptions().map_entry:
        field = message.fields_by_name["value"]
        message = field.message_type
    if message is not None:
        well_known = {
            "google.protobuf.Timestamp": "2026-12-03T07:57:00.123456Z",
            "google.protobuf.Struct": {"n": 1, "f": 2.5, "s": "x", "b": True, "z": None,
                                       "list": [1, {"deep": []}], "object": {}},
            "google.protobuf.Value": [{"a": 1}, "text", 3, None, False][variant % 5],
        }
        if message.full_name in well_known:
            return well_known[message.full_name]
        return _filled(message, variant, depth + 1) if depth < 4 else None
    kinds = {
        FieldDescriptor.TYPE_STRING: f"{field.name}-{variant}",
        FieldDescriptor.TYPE_BYTES: "aGVsbG8gd29ybGQ=",
        FieldDescriptor.TYPE_BOOL: variant % 2 == 0,
        FieldDescriptor.TYPE_INT32: 7 + variant,
        FieldDescriptor.TYPE_INT64: 70 + variant,
    }
    if field.type == FieldDescriptor.TYPE_ENUM:
        values = field.enum_type.values
        return values[1 + variant % (len(values) - 1)].name if len(values) > 1 else None
    return kinds.get(field.type, 1)


RESPONSES = sorted({method.output_type.full_name: method.output_type
                    for method in SERVICE.methods}.items())


@pytest.mark.parametrize("variant", range(4))
@pytest.mark.parametrize(("name", "descriptor"), RESPONSES, ids=[name for name, _ in RESPONSES])
def test_a_response_is_built_as_json_format_builds_it(name: str, descriptor: Descriptor,
                                                      variant: int) -> None:
    cls = message_factory.GetMessageClass(descriptor)
    document = _filled(descriptor, variant)
    expected = json_format.ParseDict(document, cls(), ignore_unknown_fields=True)
    assert messages.direct(document, cls) == expected  # the plans cover every field
    assert messages.build(document, cls) == expected
    assert expected.ByteSize() > 0 or not document


TASK: dict[str, Any] = {
    "id": "task-1", "contextId": "ctx-1",
    "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-12-03T07:57:00Z"},
    "history": [{"messageId": "m-1", "role": "ROLE_USER", "parts": [
        {"text": "hello", "mediaType": "text/plain"}, {"data": {"a": [1, None]}},
        {"raw": "aGVsbG8=", "filename": "f.txt"}, {"url": "https://example.com/f"}]}],
    "artifacts": [{"artifactId": "a-1", "name": "echo", "parts": [{"text": "hello"}]}],
    "metadata": {"agentId": "echo"},
}


@pytest.mark.parametrize("change", [
    {},
    {"unknownField": {"x": 1}},  # ignored, as json_format ignores it
    {"status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-12-03T07:57:00.123456789Z"}},
    {"status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-12-03T08:57:00+01:00"}},
    {"status": {"state": "TASK_STATE_WORKING", "timestamp": "1900-01-01T00:00:00Z"}},
    {"status": {"state": "TASK_STATE_NOT_IN_THE_PROTO"}},
    {"history": [{"messageId": "m-2", "role": "ROLE_AGENT", "parts": [{"raw": "_-8="}]}]},
    {"history": None, "metadata": None},
    {"artifacts": [{"artifactId": "a-2", "parts": [{"text": 3}]}]},  # json_format refuses
], ids=["as-is", "unknown-field", "nanoseconds", "offset", "1900", "unknown-enum",
        "url-safe-base64", "nulls", "number-as-text"])
def test_what_the_plans_do_not_cover_is_still_json_formats(change: dict[str, Any]) -> None:
    document = {**TASK, **change}
    try:
        expected = json_format.ParseDict(document, a2a_pb2.Task(), ignore_unknown_fields=True)
    except json_format.ParseError:
        with pytest.raises(json_format.ParseError):
            messages.build(document, a2a_pb2.Task)
        return
    assert messages.build(document, a2a_pb2.Task) == expected


def test_a_document_json_format_refuses_is_refused_alike() -> None:
    document = {**TASK, "status": {"state": "TASK_STATE_WORKING", "timestamp": "yesterday"}}
    with pytest.raises(json_format.ParseError):
        json_format.ParseDict(document, a2a_pb2.Task(), ignore_unknown_fields=True)
    with pytest.raises(json_format.ParseError):
        messages.build(document, a2a_pb2.Task)
