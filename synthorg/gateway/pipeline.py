"""Steps 8-12 of the inbound pipeline: parse, envelope, method, params, dispatch.

The endpoint has already admitted the peer and bounded the body, so everything here works
on bytes in memory and answers bytes. JSON-RPC-level errors answer HTTP 200; only an
unexpected fault answers 500, without detail.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from synthorg import jsonrpc
from synthorg.dialects.errors import error_details
from synthorg.dialects.protojson import json_names
from synthorg.dialects.tenant import tenant_issues
from synthorg.errors import SynthorgError
from synthorg.gateway import dialect
from synthorg.gateway.context import CallContext, Services
from synthorg.gateway.replies import RPC_ERRORS, RequestId, result_body, rpc_error
from synthorg.gateway.sse import EventStream
from synthorg.generated.constants import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    JSONRPC_VERSION,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    VERSION_NOT_SUPPORTED,
    RpcErrorSpec,
)
from synthorg.generated.models import SPEC_NAMES
from synthorg.http.numbers import NumberTooLong, json_int
from synthorg.observability.access import note_method
from synthorg.observability.events import a2a as events
from synthorg.observability.log import emit

MAX_DEPTH = 32
MAX_ID_LENGTH = 128
MAX_SAFE_INTEGER = 2**53 - 1
# What stands in a validation error's loc for a free-form object's member name (input).
MEMBER_PLACEHOLDER = "*"
_ENVELOPE_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
# A lone UTF-16 surrogate escape decodes to a str that cannot be re-encoded as UTF-8.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_TOO_DEEP = f"Invalid request: nesting deeper than {MAX_DEPTH}"


class _Reject(Exception):
    def __init__(self, error: RpcErrorSpec, message: str, request_id: RequestId = None) -> None:
        self.error, self.message, self.request_id = error, message, request_id


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _json_number(text: str) -> float | int:
    """Fractional or exponent literals. JSON Schema counts 5.0 as an integer, so integral
    values become ints before the strict models see them; 1e999 is refused, not infinity."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("number out of range")
    return int(value) if value.is_integer() else value


_DECODER = json.JSONDecoder(
    parse_constant=_reject_constant, parse_float=_json_number, parse_int=json_int
)


def _check_structure(value: Any, check_strings: bool) -> None:
    """Bound nesting depth and, when needed, reject strings holding lone surrogates."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = list(node.values())
            if check_strings:
                children.extend(node.keys())
        elif isinstance(node, list):
            children = node
        else:
            if check_strings and isinstance(node, str):
                try:
                    node.encode("utf-8")
                except UnicodeEncodeError:
                    raise _Reject(PARSE_ERROR, "Parse error: invalid Unicode escape") from None
            continue
        if depth > MAX_DEPTH:
            raise _Reject(INVALID_REQUEST, _TOO_DEEP)
        stack.extend((child, depth + 1) for child in children)


def too_deep(value: Any) -> str | None:
    """The refusal of a document nested deeper than MAX_DEPTH (parsed by another binding's
    parser), else None."""
    try:
        _check_structure(value, False)
    except _Reject as reject:
        return reject.message
    return None


def _parse(body: bytes) -> Any:
    try:
        text = body.decode("utf-8")
        parsed = _DECODER.decode(text)
    except RecursionError:
        raise _Reject(INVALID_REQUEST, _TOO_DEEP) from None
    except NumberTooLong as too_long:
        raise _Reject(PARSE_ERROR, f"Parse error: {too_long}") from None
    except (UnicodeDecodeError, ValueError):
        raise _Reject(PARSE_ERROR, "Parse error: body is not UTF-8 JSON") from None
    check_strings = _SURROGATE_ESCAPE.search(text) is not None
    # Fewer brackets than the depth bound cannot nest past it: nothing to walk then.
    if check_strings or text.count("{") + text.count("[") > MAX_DEPTH:
        _check_structure(parsed, check_strings)
    return parsed


def _valid_id(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= MAX_ID_LENGTH
    return type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


def _envelope(parsed: Any) -> tuple[RequestId, str, dict[str, Any]]:
    if isinstance(parsed, list):
        raise _Reject(INVALID_REQUEST, "Invalid request: batches are not supported")
    if not isinstance(parsed, dict):
        raise _Reject(INVALID_REQUEST, "Invalid request: the body must be a JSON object")
    # A request without an id is answered like any other, with id null, after the method
    # and params checks; an id that is present must be well formed.
    if "id" in parsed and not _valid_id(parsed["id"]):
        raise _Reject(
            INVALID_REQUEST,
            f"Invalid request: id must be a string of at most {MAX_ID_LENGTH} characters "
            "or a safe integer",
        )
    request_id: RequestId = parsed.get("id")
    if parsed.get("jsonrpc") != JSONRPC_VERSION:
        raise _Reject(
            INVALID_REQUEST, f'Invalid request: jsonrpc must be "{JSONRPC_VERSION}"', request_id
        )
    if not parsed.keys() <= _ENVELOPE_KEYS:
        raise _Reject(INVALID_REQUEST, "Invalid request: unexpected envelope member", request_id)
    method = parsed.get("method")
    if not isinstance(method, str):
        raise _Reject(INVALID_REQUEST, "Invalid request: method must be a string", request_id)
    params = parsed.get("params", {})
    if not isinstance(params, dict):
        raise _Reject(INVALID_PARAMS, "Invalid params: params must be an object", request_id)
    return request_id, method, params


def _safe_msg(item: Any) -> str:
    """pydantic's message, unless it quotes the caller's input (e.g. an unknown union tag)."""
    if item["type"] == "union_tag_invalid":
        expected = item.get("ctx", {}).get("expected_tags", "")
        return f"Input tag does not match any of the expected tags: {expected}"
    value = item.get("input")
    quoted = isinstance(value, str | int | float) and not isinstance(value, bool)
    if quoted and str(value) and str(value) in item["msg"]:
        return "Invalid value"
    return str(item["msg"])


def _safe_loc(item: Any) -> list[int | str]:
    """The error's location, without the params union's tag (the method, already known).
    A free-form object's member names are input: each that is no name the spec defines
    (SPEC_NAMES) nor pydantic's "[key]" shows as MEMBER_PLACEHOLDER, so loc holds nothing
    the caller chose beyond list indices and the spec's own words. An unknown member of a
    closed object is still named, as the issue it reports."""
    loc = item["loc"][1:]
    named = len(loc) - 1 if item["type"] == "extra_forbidden" else len(loc)
    return [
        part
        if index >= named or isinstance(part, int) or part in SPEC_NAMES or part == "[key]"
        else MEMBER_PLACEHOLDER
        for index, part in enumerate(loc)
    ]


def _smuggled_method(raw_params: dict[str, Any], method: str) -> list[dict[str, Any]]:
    if "method" not in raw_params or raw_params["method"] == method:
        return []
    return [
        {
            "loc": ["method"],
            "msg": f"Input should be {method!r} (the envelope's method) or omitted",
            "type": "literal_error",
        }
    ]


def _validation_issues(error: ValidationError) -> list[dict[str, Any]]:
    issues = []
    for item in error.errors(include_url=False):
        issues.append({"loc": _safe_loc(item), "msg": _safe_msg(item), "type": item["type"]})
    return issues


def validated(
    spoken: dialect.Dialect, method: str, raw_params: dict[str, Any], body: bytes | None = None
) -> tuple[Any, list[dict[str, Any]]]:
    """Step 11: the params as `method`'s model of `spoken`, or the issues that refuse them
    (-32602 / INVALID_ARGUMENT, each issue's `loc` free of the caller's own names). `body`:
    the request's bytes, when they can tell that nothing needs renaming (every binding
    validates here, so each refuses the same params the same way)."""
    # Envelope precedence: the envelope's method is copied over params.method, so the
    # params are validated as the envelope's method. A different params.method is also
    # reported, as the spec's const says, instead of passing silently.
    issues = _smuggled_method(raw_params, method)
    v1 = spoken is dialect.V1
    # A proto field name holds an underscore: a body without one has none to rename.
    if v1 and (body is None or b"_" in body):
        raw_params, renamed = json_names(raw_params)
        issues += renamed
    if v1 and (body is None or b"tenant" in body):
        issues += tenant_issues(raw_params)
    params = None
    try:
        params = spoken.params.validate_python({**raw_params, "method": method})
    except ValidationError as exc:
        issues = _validation_issues(exc) + issues
    return params, issues


async def answer(
    body: bytes, peer: str, agent_id: str | None, services: Services,
    last_event_id: str | None = None,
    *,
    version: str | None = None,
    scope: Mapping[str, Any] | None = None,
) -> tuple[int, bytes] | EventStream:
    """Run steps 8-12 for one admitted request: (HTTP status, response body), or the stream
    a streaming method answers once its first event is known. `version` is the A2A-Version
    header (`gateway/dialect.py`: which methods it selects)."""
    request_id: RequestId = None
    method = ""
    # The request is in the 1.0 dialect: its error.data is 1.0's array. Its header says so
    # until its method routes it.
    v1 = dialect.speaks_v1(version)

    def refused(spec: RpcErrorSpec, message: str | None, data: Mapping[str, Any] | None) -> bytes:
        if v1:
            return jsonrpc.error(spec, message, request_id, error_details(spec, data))
        return jsonrpc.error(spec, message, request_id, data)

    try:
        request_id, method, raw_params = _envelope(_parse(body))
        note_method(method)
        emit(events.INBOUND_RECEIVED, method=method[:64], request_id=request_id, peer_name=peer)
        allowed = dialect.dialects(version)
        if allowed is None:
            return 200, jsonrpc.error(VERSION_NOT_SUPPORTED, None, request_id)
        v1 = allowed == (dialect.V1,)
        found = dialect.route(allowed, method)
        if found is None:
            emit(
                events.JSONRPC_METHOD_NOT_FOUND,
                method=method[:64],
                request_id=request_id,
                peer_name=peer,
            )
            return 200, refused(METHOD_NOT_FOUND, None, None)
        route, spoken = found
        v1 = spoken is dialect.V1
        params, issues = validated(spoken, method, raw_params, body)
        if issues:
            emit(
                events.BOUNDARY_VALIDATION_FAILED,
                method=method,
                request_id=request_id,
                peer_name=peer,
                errors=len(issues),
            )
            return 200, refused(INVALID_PARAMS, None, {"errors": issues})
        context = CallContext(
            peer, request_id, agent_id, services.tasks, services.skills, services.push,
            last_event_id, services.cards, scope,
        )
        if route.stream is not None:
            stream = route.stream(params, context)
            try:
                first = await anext(stream)
            except SynthorgError as error:
                if type(error) not in RPC_ERRORS:
                    raise
                spec, message, data = rpc_error(error)
                if v1:  # 1.0 clients read a refusal before the stream as a plain answer
                    return 200, refused(spec, message, data)
                return EventStream.refusal(request_id, refused(spec, message, data), peer)
            return EventStream(request_id, first, stream, peer, v1=v1)
        assert route.handler is not None
        result = await route.handler(params, context)
        return 200, result_body(request_id, result)
    except _Reject as reject:
        emit(
            events.JSONRPC_PARSE_ERROR,
            peer_name=peer,
            reason=reject.message,
            request_id=reject.request_id,
        )
        details = error_details(reject.error, None) if v1 else None
        return 200, jsonrpc.error(reject.error, reject.message, reject.request_id, details)
    except SynthorgError as error:
        if type(error) in RPC_ERRORS:
            spec, message, data = rpc_error(error)
            return 200, refused(spec, message, data)
        return _fault(error, method, request_id, peer, v1)
    except Exception as exc:  # an unexpected fault: no detail leaves the node
        return _fault(exc, method, request_id, peer, v1)


def _fault(
    exc: Exception, method: str, request_id: RequestId, peer: str, v1: bool
) -> tuple[int, bytes]:
    emit(
        events.INTERNAL_ERROR,
        level="error",
        method=method[:64],
        request_id=request_id,
        peer_name=peer,
        error=type(exc).__name__,
    )
    details = error_details(INTERNAL_ERROR, None) if v1 else None
    return 500, jsonrpc.error(INTERNAL_ERROR, None, request_id, details)


# What the HTTP+JSON binding (gateway/rest.py) shares: the same parser, limits and refusals.
parse, Reject = _parse, _Reject
