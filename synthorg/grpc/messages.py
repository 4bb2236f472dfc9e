"""A result model's ProtoJSON document as its protobuf message, built directly.

`json_format.ParseDict` walks the document in Python field by field, checking and converting
each value through several layers: for a task with its history it is most of a gRPC call's
cost. This builds the same message in one constructor call: a plan per message type (each
JSON name to its field name and how its value converts) turns the document into constructor
arguments, and the C message constructor does the rest (nested messages from dicts, enums
from their names, Struct from a dict, Timestamp from a datetime).

The plans cover what the A2A messages hold. A value a plan cannot convert (a well-known type
it does not know, a timestamp or base64 it cannot read, an enum name the proto lacks) makes
`build` fall back to json_format, so the answer is json_format's in every case: the unit tests
check the two agree.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import datetime
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

Convert = Callable[[Any], Any]
Plan = dict[str, tuple[str, Convert | None]]  # a JSON key: the field's name and its conversion

_plans: dict[str, Plan] = {}
_INTEGERS = frozenset({
    FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED64, FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_FIXED32,
    FieldDescriptor.TYPE_SFIXED32,
})
_LONGEST = "2026-01-01T00:00:00.000000Z"
_FLOATS = frozenset({FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT})


class Unplanned(ValueError):
    """A value the plans do not convert: json_format converts the document instead."""


def build(document: dict[str, Any], cls: type[Message]) -> Message:
    """`json_format.ParseDict(document, cls(), ignore_unknown_fields=True)`, faster."""
    try:
        return direct(document, cls)
    except (ValueError, TypeError, KeyError, OverflowError):
        return json_format.ParseDict(document, cls(), ignore_unknown_fields=True)


def direct(document: dict[str, Any], cls: type[Message]) -> Message:
    """The message by the plans alone; ValueError (or TypeError) for what they do not cover."""
    descriptor: Any = cls.DESCRIPTOR
    return cls(**_arguments(descriptor, document))


def _arguments(descriptor: Descriptor, document: dict[str, Any]) -> dict[str, Any]:
    plan = _plans.get(descriptor.full_name)
    if plan is None:
        plan = _plans[descriptor.full_name] = _plan(descriptor)
    arguments: dict[str, Any] = {}
    for key, value in document.items():
        entry = plan.get(key)
        if entry is None or value is None:  # unknown fields are ignored; null is unset
            continue
        name, convert = entry
        arguments[name] = value if convert is None else convert(value)
    return arguments


def _plan(descriptor: Descriptor) -> Plan:
    plan: Plan = {}
    for field in descriptor.fields:
        convert = _field(field)
        plan[field.name] = plan[field.json_name] = (field.name, convert)  # as json_format
    return plan


def _field(field: FieldDescriptor) -> Convert | None:
    message = field.message_type
    if message is not None and message.GetOptions().map_entry:
        value = _single(message.fields_by_name["value"])
        if value is None:
            return None
        return lambda entries: {key: value(item) for key, item in entries.items()}
    single = _single(field)
    if single is None or not field.is_repeated:
        return single
    return lambda items: [single(item) for item in items]


def _single(field: FieldDescriptor) -> Convert | None:
    """How one value of the field converts (None: as it is)."""
    message = field.message_type
    if message is not None:
        name = message.full_name
        if name == "google.protobuf.Timestamp":
            return _timestamp
        if name == "google.protobuf.Struct":
            return _struct
        if name == "google.protobuf.Value":
            return _value
        if name.startswith("google.protobuf."):
            return _unplanned
        return lambda document: _arguments(message, _object(document))
    if field.type == FieldDescriptor.TYPE_BYTES:
        return _bytes
    if field.type in _INTEGERS:
        return _integer
    if field.type in _FLOATS:
        return _float
    if field.type == FieldDescriptor.TYPE_BOOL:
        return _bool
    return None  # a string or an enum's name (or number): the constructor checks its type


def _unplanned(value: Any) -> Any:
    raise Unplanned("a well-known type without a plan")


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Unplanned("a message that is not a JSON object")
    return value


def _timestamp(value: Any) -> datetime:
    # Up to microseconds (fromisoformat would drop nanoseconds), in UTC: else json_format.
    if not isinstance(value, str) or not value.endswith("Z") or len(value) > len(_LONGEST):
        raise Unplanned("a timestamp this plan does not read")
    moment = datetime.fromisoformat(value)
    if moment.utcoffset() is None:
        raise Unplanned("a timestamp without its zone")
    return moment


def _struct(value: Any) -> dict[str, Any]:
    return _object(value)


def _value(value: Any) -> dict[str, Any]:
    """A JSON value as google.protobuf.Value's constructor arguments."""
    if value is None:
        return {"null_value": 0}
    if isinstance(value, bool):
        return {"bool_value": value}
    if isinstance(value, int | float):
        return {"number_value": value}
    if isinstance(value, str):
        return {"string_value": value}
    if isinstance(value, dict):
        return {"struct_value": value}
    if isinstance(value, list):
        return {"list_value": {"values": [_value(item) for item in value]}}
    raise Unplanned("not a JSON value")


def _bytes(value: Any) -> bytes:
    if not isinstance(value, str):
        raise Unplanned("bytes that are not base64 text")
    return base64.b64decode(value, validate=True)  # else json_format, which reads url-safe too


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Unplanned("an integer given as text or a float")
    return value


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Unplanned("a number given as text")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Unplanned("a boolean given as something else")
    return value

