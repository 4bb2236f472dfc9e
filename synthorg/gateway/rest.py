"""A2A 1.0's HTTP+JSON (REST) binding: each route of the spec's `a2a-rest` operations names a
1.0 method, and its path, query and body make that method's params. From there a request is
the JSON-RPC 1.0 dialect's: the same params models, ProtoJSON names and tenant rule
(`pipeline.validate_params`), the same handlers (`dispatch.DISPATCH_V1`: `handlers/`). Only
the answer differs: the result itself (no envelope), an error as an HTTP status with
google.rpc.Status (`dialects/errors.py`), a stream's events bare (`sse.py`).

The gates, limits and their refusals are the endpoint's (`endpoint.py`), shared with JSON-RPC.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any, NamedTuple, get_args
from urllib.parse import parse_qsl

from pydantic import BaseModel

from synthorg.dialects.errors import http_error
from synthorg.dialects.protojson import json_names
from synthorg.errors import SynthorgError
from synthorg.gateway import dialect
from synthorg.gateway.context import CallContext, Services
from synthorg.gateway.dispatch import DISPATCH_V1, Route
from synthorg.gateway.pipeline import Reject, parse, validated
from synthorg.gateway.replies import RPC_ERRORS, encoded, rpc_error
from synthorg.gateway.sse import EventStream
from synthorg.generated import constants as spec
from synthorg.generated.constants import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    OPERATIONS,
    V1_PROTO_NAMES,
    VERSION_NOT_SUPPORTED,
    Operation,
)
from synthorg.observability.access import note_method
from synthorg.observability.events import a2a as events
from synthorg.observability.log import emit

Issue = dict[str, Any]
_COMPANY_ID, _AGENT_ID = "gateway.rest.", "gateway.rest.agent_"
# Each route and the 1.0 method it calls.
_METHODS: Mapping[Operation, str] = {
    spec.GATEWAY_REST_SEND_MESSAGE: spec.V1_SEND_MESSAGE,
    spec.GATEWAY_REST_SEND_STREAMING_MESSAGE: spec.V1_SEND_STREAMING_MESSAGE,
    spec.GATEWAY_REST_LIST_TASKS: spec.V1_LIST_TASKS,
    spec.GATEWAY_REST_GET_TASK: spec.V1_GET_TASK,
    spec.GATEWAY_REST_CANCEL_TASK: spec.V1_CANCEL_TASK,
    spec.GATEWAY_REST_SUBSCRIBE_TO_TASK: spec.V1_SUBSCRIBE_TO_TASK,
    spec.GATEWAY_REST_SUBSCRIBE_TO_TASK_POST: spec.V1_SUBSCRIBE_TO_TASK,
    spec.GATEWAY_REST_LIST_TASK_PUSH_NOTIFICATION_CONFIGS:
        spec.V1_LIST_TASK_PUSH_NOTIFICATION_CONFIGS,
    spec.GATEWAY_REST_CREATE_TASK_PUSH_NOTIFICATION_CONFIG:
        spec.V1_CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
    spec.GATEWAY_REST_GET_TASK_PUSH_NOTIFICATION_CONFIG:
        spec.V1_GET_TASK_PUSH_NOTIFICATION_CONFIG,
    spec.GATEWAY_REST_DELETE_TASK_PUSH_NOTIFICATION_CONFIG:
        spec.V1_DELETE_TASK_PUSH_NOTIFICATION_CONFIG,
    spec.GATEWAY_REST_GET_EXTENDED_AGENT_CARD: spec.V1_GET_EXTENDED_AGENT_CARD,
}
# Where the binding's routes are: the spec's own paths' common prefix (/api/v1/a2a/rest/).
PREFIX = posixpath.commonpath([op.path for op in _METHODS]) + "/"
# Each agent's copy of every route (/api/v1/a2a/agents/{agent_id}/rest/...), by operationId.
_BY_ID = {op.operation_id: op for op in OPERATIONS}
_AGENT_OF = {op: _BY_ID[op.operation_id.replace(_COMPANY_ID, _AGENT_ID)] for op in _METHODS}
_AGENT_METHODS = {_AGENT_OF[op]: method for op, method in _METHODS.items()}
OPERATIONS_REST = (*_METHODS, *_AGENT_METHODS)
assert {op for op in OPERATIONS if op.operation_id.startswith(_COMPANY_ID)} == set(
    OPERATIONS_REST)
AGENT_ID = "agent_id"  # the agent routes' path parameter (AgentIdPath)
# The routes whose body may be empty (their request message is all in the path).
_OPTIONAL = (spec.GATEWAY_REST_CANCEL_TASK, spec.GATEWAY_REST_SUBSCRIBE_TO_TASK_POST)
OPTIONAL_BODY = frozenset({*_OPTIONAL, *(_AGENT_OF[op] for op in _OPTIONAL)})
MAX_QUERY_FIELDS = 16
_PARAM = re.compile(r"\{([A-Za-z_]+)\}")
_INTEGER = re.compile(r"[+-]?[0-9]{1,12}")
_BOOLEANS = {"true": True, "false": False}


class RestRoute(NamedTuple):
    operation: Operation
    method: str  # the 1.0 method
    route: Route  # its entry in the 1.0 dispatch table
    query_kinds: Mapping[str, type]  # int or bool: how a member's query value is read


def _pattern(template: str) -> re.Pattern[str]:
    parts = _PARAM.split(template)  # literal, name, literal, name, ...
    return re.compile("".join(
        f"(?P<{part}>[^/]+)" if index % 2 else re.escape(part)
        for index, part in enumerate(parts)
    ))


def _scalar(annotation: Any) -> type | None:
    """int or bool when a member's annotation is one (optional, constrained or not)."""
    if annotation in (int, bool):
        return annotation  # type: ignore[no-any-return]
    for inner in get_args(annotation):
        found = _scalar(inner)
        if found is not None:
            return found
    return None


def _kinds(model: type[BaseModel]) -> dict[str, type]:
    """The members whose query value is read as a number or a boolean."""
    kinds = {}
    for name, field in model.model_fields.items():
        kind = _scalar(field.annotation)
        if kind is not None:
            kinds[name] = kind
    return kinds


def _routes() -> list[tuple[re.Pattern[str], dict[str, RestRoute]]]:
    """Each path template (the longest literal first: `tasks/{id}:cancel` before
    `tasks/{id}`, which would match it too) with its routes by HTTP method."""
    by_path: dict[str, dict[str, RestRoute]] = {}
    for op, method in {**_METHODS, **_AGENT_METHODS}.items():
        route = DISPATCH_V1[method]
        by_path.setdefault(op.path, {})[op.method] = RestRoute(
            op, method, route, _kinds(route.params)
        )
    ordered = sorted(by_path, key=lambda path: -len(_PARAM.sub("", path)))
    return [(_pattern(path), by_path[path]) for path in ordered]


_ROUTES = _routes()


class Target(NamedTuple):
    routes: Mapping[str, RestRoute]  # by HTTP method
    path_params: dict[str, str]  # the request message's members the path gives
    agent: str | None  # the raw path segment on an agent's routes; checked after the gates


def rest_target(path: str) -> Target | None:
    """The routes `path` names, or None when it names none of this binding's."""
    for pattern, routes in _ROUTES:
        match = pattern.fullmatch(path)
        if match is not None:
            params = match.groupdict()
            return Target(routes, params, params.pop(AGENT_ID, None))
    return None


def _issue(name: str, msg: str, kind: str) -> Issue:
    return {"loc": [name], "msg": msg, "type": kind}


def _query(route: RestRoute, query: bytes, params: dict[str, Any], issues: list[Issue]) -> None:
    try:
        pairs = parse_qsl(query.decode("ascii"), keep_blank_values=True, strict_parsing=False,
                          errors="strict", max_num_fields=MAX_QUERY_FIELDS)
    except (UnicodeError, ValueError):
        raise Reject(INVALID_REQUEST, "Invalid request: the query is not well formed") from None
    seen: set[str] = set()
    for name, value in pairs:
        json_name = V1_PROTO_NAMES.get(name, name)
        if json_name in seen:
            issues.append(_issue(json_name, f"{json_name} is given more than once",
                                 "repeated_parameter"))
            continue
        seen.add(json_name)
        kind = route.query_kinds.get(json_name)
        read: Any = value
        if kind is int and _INTEGER.fullmatch(value):
            read = int(value)
        elif kind is bool and value in _BOOLEANS:
            read = _BOOLEANS[value]
        _merge(params, json_name, read, issues)


def _merge(params: dict[str, Any], name: str, value: Any, issues: list[Issue]) -> None:
    """A member from the path or the query: the body may name it too, with the same value."""
    if name in params and params[name] != value:
        issues.append(_issue(name, f"{name} is the path's or the query's: send the same value "
                                   "or omit it", "path_mismatch"))
    params[name] = value


def _body(body: bytes) -> tuple[dict[str, Any], list[Issue]]:
    if not body.strip():
        return {}, []
    parsed = parse(body)
    if not isinstance(parsed, dict):
        raise Reject(INVALID_REQUEST, "Invalid request: the body must be a JSON object")
    issues = []
    if "method" in parsed:  # the route names the method; the body is the request message
        del parsed["method"]
        issues.append(_issue("method", "Extra inputs are not permitted", "extra_forbidden"))
    if b"_" in body:  # its proto names read first, so they meet the path's by their JSON name
        parsed, renamed = json_names(parsed)
        issues += renamed
    return parsed, issues


async def answer(
    route: RestRoute, path_params: Mapping[str, str], query: bytes, body: bytes, peer: str,
    agent_id: str | None, services: Services, last_event_id: str | None,
    scope: Mapping[str, Any], version: str | None = None,
) -> tuple[int, bytes] | EventStream:
    """Steps 8-12 of one admitted HTTP+JSON request: (HTTP status, body), or the stream of a
    streaming route once its first event is known. `version` is the A2A-Version header: the
    binding serves 1.0, so one that names another version is refused, as on JSON-RPC."""
    method = route.method
    note_method(method)
    emit(events.INBOUND_RECEIVED, method=method, request_id=None, peer_name=peer)
    allowed = dialect.dialects(version)
    if allowed is None or dialect.V1 not in allowed:
        return http_error(VERSION_NOT_SUPPORTED)
    try:
        params_in, issues = _body(body) if route.operation.has_body else ({}, [])
        for name, value in path_params.items():
            _merge(params_in, name, value, issues)
        if query:
            _query(route, query, params_in, issues)
        params, found = validated(dialect.V1, method, params_in, body + query)
        issues = found + issues
        if issues:
            emit(events.BOUNDARY_VALIDATION_FAILED, method=method, request_id=None,
                 peer_name=peer, errors=len(issues))
            return http_error(INVALID_PARAMS, None, {"errors": issues})
        context = CallContext(
            peer, None, agent_id, services.tasks, services.skills, services.push,
            last_event_id, services.cards, scope,
        )
        if route.route.stream is not None:
            stream = route.route.stream(params, context)
            try:
                first = await anext(stream)
            except SynthorgError as error:
                if type(error) not in RPC_ERRORS:
                    raise
                return http_error(*rpc_error(error))
            return EventStream(None, first, stream, peer, bare=True)
        assert route.route.handler is not None
        result = await route.route.handler(params, context)
        return 200, b"{}" if result is None else encoded(result)
    except Reject as reject:
        emit(events.JSONRPC_PARSE_ERROR, peer_name=peer, reason=reject.message, request_id=None)
        return http_error(reject.error, reject.message)
    except SynthorgError as error:
        if type(error) in RPC_ERRORS:
            return http_error(*rpc_error(error))
        return _fault(error, method, peer)
    except Exception as exc:  # an unexpected fault: no detail leaves the node
        return _fault(exc, method, peer)


def _fault(exc: Exception, method: str, peer: str) -> tuple[int, bytes]:
    emit(events.INTERNAL_ERROR, level="error", method=method, request_id=None, peer_name=peer,
         error=type(exc).__name__)
    return http_error(INTERNAL_ERROR)
