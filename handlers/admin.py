"""The admin API's operations (spec/openapi.yaml, tag `admin`).

The admin gate has authenticated the operator and, for PUT and POST, buffered the body
(at most 64 KiB, JSON) before any of these run. Bodies are validated with the generated
models (strict: unknown keys, wrong types and `null`s are refused); the values themselves by
the admin operations the CLI shares, which audit every change.

Refusals are answered here, at the edge: the operations raise `synthorg.errors` in domain
terms and `_answered` turns them into AdminErrors with their HTTP status.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, ValidationError
from starlette.responses import Response, StreamingResponse

from handlers.context import AdminContext, HttpRequest, Sequenced, TaskListQuery
from synthorg import errors
from synthorg.admin.task_query import DEFAULT_PAGE
from synthorg.generated.constants import (
    ADMIN_ERROR_INTERNAL_ERROR,
    ADMIN_ERROR_INVALID_BODY,
    ADMIN_ERROR_INVALID_VALUE,
    ADMIN_ERROR_PEER_EXISTS,
    ADMIN_ERROR_TASK_NOT_CANCELABLE,
    ADMIN_ERROR_UNKNOWN_PEER,
    ADMIN_ERROR_UNKNOWN_SETTING,
    ADMIN_ERROR_UNKNOWN_TASK,
    ADMIN_LIST_PEERS,
    AUDIT_VIA_VALUES,
    MEDIA_TYPE_APPLICATION_JSON,
    MEDIA_TYPE_TEXT_EVENT_STREAM,
    PEER_NAME_PATTERN,
    TASK_DIRECTION_INBOUND,
    TASK_DIRECTIONS,
)
from synthorg.generated.models import (
    AuditEvent,
    PeerBindingWrite,
    PeerCardKeyWrite,
    PeerCreate,
    PeerRateLimitWrite,
    PeerReplace,
    SettingName,
    SettingWrite,
    StreamEvent,
    TaskState,
)
from synthorg.http.numbers import NumberTooLong, json_int
from synthorg.http.responses import admin_error
from synthorg.observability.events.admin import INTERNAL_ERROR, REQUEST_REFUSED
from synthorg.observability.log import emit
from synthorg.store.catalog import MIN_SECRET_LENGTH

Operation = Callable[[HttpRequest, AdminContext], Awaitable[Response]]
M = TypeVar("M", bound=BaseModel)
PEERS_PATH = ADMIN_LIST_PEERS.path

# Domain error -> (HTTP status, AdminError code).
_REFUSALS: dict[type[errors.SynthorgError], tuple[int, str]] = {
    errors.InvalidValue: (400, ADMIN_ERROR_INVALID_VALUE),
    errors.UnknownSetting: (404, ADMIN_ERROR_UNKNOWN_SETTING),
    errors.UnknownPeer: (404, ADMIN_ERROR_UNKNOWN_PEER),
    errors.PeerExists: (409, ADMIN_ERROR_PEER_EXISTS),
    errors.UnknownTask: (404, ADMIN_ERROR_UNKNOWN_TASK),
    errors.NotCancelable: (409, ADMIN_ERROR_TASK_NOT_CANCELABLE),
}


class InvalidBody(errors.SynthorgError):
    """The body is not a JSON object of the operation's schema (400 invalid_body)."""


_REFUSALS[InvalidBody] = (400, ADMIN_ERROR_INVALID_BODY)


def _refusal(status: int, error: str, message: str, key: object = None,
             allowed: object = None) -> Response:
    """An AdminError answer (the spec's model, serialised once)."""
    return Response(admin_error(error, message, key, allowed), status_code=status,
                    media_type=MEDIA_TYPE_APPLICATION_JSON, headers={"Cache-Control": "no-store"})


def _answer(status: int, document: Any = None, headers: dict[str, str] | None = None
            ) -> Response:
    all_headers = {"Cache-Control": "no-store", **(headers or {})}
    if document is None:
        return Response(status_code=status, headers=all_headers)
    body = json.dumps(document, separators=(",", ":")).encode()
    return Response(body, status_code=status, media_type=MEDIA_TYPE_APPLICATION_JSON,
                    headers=all_headers)


def _answered(operation: Operation) -> Operation:
    """Turn refusals and faults into AdminErrors."""

    @functools.wraps(operation)
    async def wrapper(request: HttpRequest, ctx: AdminContext) -> Response:
        try:
            return await operation(request, ctx)
        except errors.SynthorgError as problem:
            refusal = _REFUSALS.get(type(problem))
            if isinstance(problem, errors.SecretUnreadable):  # safe to show the operator
                emit(INTERNAL_ERROR, level="error", operation=operation.__name__,
                     reason="secretbox", detail=str(problem))
                return _refusal(500, ADMIN_ERROR_INTERNAL_ERROR, str(problem))
            if refusal is None:
                return _fault(operation, problem)
            status, error = refusal
            key, allowed = problem.detail.get("key"), problem.detail.get("allowed")
            emit(REQUEST_REFUSED, level="warning", operation=operation.__name__,
                 status=status, error=error, key=key)
            return _refusal(status, error, str(problem), key, allowed)
        except Exception as exc:
            return _fault(operation, exc)

    return wrapper


def _fault(operation: Operation, exc: Exception) -> Response:
    emit(INTERNAL_ERROR, level="error", operation=operation.__name__, reason=type(exc).__name__)
    return _refusal(500, ADMIN_ERROR_INTERNAL_ERROR, "Internal error")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _body(request: HttpRequest, model: type[M]) -> tuple[M, dict[str, Any]]:
    """The buffered body as `model` (strict), and as the plain JSON it was sent as."""
    try:
        document = json.loads(request.body.decode("utf-8"), parse_constant=_reject_constant,
                              parse_int=json_int)
    except NumberTooLong as too_long:
        raise InvalidBody(f"The body is not acceptable JSON: {too_long}") from None
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InvalidBody("The body is not UTF-8 JSON") from None
    if not isinstance(document, dict):
        raise InvalidBody("The body must be a JSON object")
    try:
        parsed = model.model_validate(document)
    except ValidationError as exc:
        raise _invalid(exc) from None
    return parsed, document


def _invalid(exc: ValidationError) -> InvalidBody:
    """400 naming the first field at fault, without echoing any input (it may be a secret)."""
    first = exc.errors(include_input=False, include_url=False)[0]
    loc = ".".join(str(part) for part in first["loc"]) or None
    kind = first["type"]
    if kind == "missing":
        message = f"{loc} is required"
    elif kind == "extra_forbidden":
        message = f"{loc} is not a known field"
    elif loc == "secret" and kind == "string_pattern_mismatch":
        message = "secret must have no surrounding whitespace and no control characters"
    elif loc == "secret" and kind == "string_too_short":
        message = f"secret must be at least {MIN_SECRET_LENGTH} characters"
    elif loc == "endpoint" and kind == "string_pattern_mismatch":
        message = "endpoint must be an absolute http(s) URL without credentials, query or fragment"
    elif loc == "name" and kind == "string_pattern_mismatch":
        message = ("name must be 1-63 characters of a-z, 0-9, '.', '_' or '-', starting with a "
                   "letter or digit")
    else:
        message = f"{loc}: {first['msg']}" if loc else str(first["msg"])
    return InvalidBody(message, key=loc)


# -- settings ----------------------------------------------------------------------------------


@_answered
async def list_settings(request: HttpRequest, ctx: AdminContext) -> Response:
    return _answer(200, {"settings": ctx.list_settings()})


@_answered
async def get_setting(request: HttpRequest, ctx: AdminContext) -> Response:
    return _answer(200, ctx.get_setting(request.path_params["name"]))


@_answered
async def put_setting(request: HttpRequest, ctx: AdminContext) -> Response:
    name = request.path_params["name"]
    allowed = ctx.require_setting(name)  # an unknown name is 404 whatever the body
    try:
        _, document = _body(request, SettingWrite)
    except InvalidBody as problem:
        if problem.detail.get("key") == "value" and not str(problem).endswith(" is required"):
            # Not a number: say what the setting takes, as for a number out of range.
            raise errors.InvalidValue(f"{name} must be {allowed}", key=name,
                                      allowed=allowed) from None
        raise
    # The JSON value as sent (the model reads every number as a float): an integer setting
    # must be sent a whole JSON number, and is kept as one.
    return _answer(200, ctx.set_setting(name, document["value"], request.client))


@_answered
async def reset_setting(request: HttpRequest, ctx: AdminContext) -> Response:
    return _answer(200, ctx.reset_setting(request.path_params["name"], request.client))


# -- peers -------------------------------------------------------------------------------------


@_answered
async def list_peers(request: HttpRequest, ctx: AdminContext) -> Response:
    return _answer(200, {"peers": ctx.list_peers()})


@_answered
async def create_peer(request: HttpRequest, ctx: AdminContext) -> Response:
    body, _ = _body(request, PeerCreate)
    peer = ctx.create_peer(body.name, body.endpoint, body.scheme, body.secret, request.client)
    return _answer(201, peer, {"Location": f"{PEERS_PATH}/{peer['name']}"})


@_answered
async def get_peer(request: HttpRequest, ctx: AdminContext) -> Response:
    return _answer(200, ctx.get_peer(request.path_params["name"]))


@_answered
async def replace_peer(request: HttpRequest, ctx: AdminContext) -> Response:
    name = request.path_params["name"]
    ctx.require_peer(name)  # an unknown name is 404 whatever the body
    body, _ = _body(request, PeerReplace)
    return _answer(200, ctx.replace_peer(name, body.endpoint, body.scheme, body.secret,
                                         request.client))


@_answered
async def set_peer_card_key(request: HttpRequest, ctx: AdminContext) -> Response:
    name = request.path_params["name"]
    ctx.require_peer(name)
    body, _ = _body(request, PeerCardKeyWrite)
    return _answer(200, ctx.set_peer_card_key(name, body.cardKey, request.client))


@_answered
async def set_peer_binding(request: HttpRequest, ctx: AdminContext) -> Response:
    name = request.path_params["name"]
    ctx.require_peer(name)
    body, _ = _body(request, PeerBindingWrite)
    return _answer(200, ctx.set_peer_binding(name, body.binding, request.client))


@_answered
async def set_peer_rate_limit(request: HttpRequest, ctx: AdminContext) -> Response:
    name = request.path_params["name"]
    ctx.require_peer(name)  # an unknown name is 404 whatever the body
    body, _ = _body(request, PeerRateLimitWrite)
    per_second = None if body.rateLimit is None else float(body.rateLimit)
    return _answer(200, ctx.set_peer_rate_limit(name, per_second, request.client))


@_answered
async def delete_peer(request: HttpRequest, ctx: AdminContext) -> Response:
    ctx.delete_peer(request.path_params["name"], request.client)
    return _answer(204)


@_answered
async def peer_activity(request: HttpRequest, ctx: AdminContext) -> Response:
    return _answer(200, await ctx.peer_activity(request.path_params["name"]))


@_answered
async def metrics_samples(request: HttpRequest, ctx: AdminContext) -> Response:
    return _answer(200, ctx.metrics_samples())


# -- status ------------------------------------------------------------------------------------


@_answered
async def status(request: HttpRequest, ctx: AdminContext) -> Response:
    return _answer(200, await ctx.status())


# -- tasks -------------------------------------------------------------------------------------

_DIRECTIONS = TASK_DIRECTIONS
_TASK_STATES = frozenset(get_args(TaskState))
_MAX_PAGE = 100
_PEER_NAME = re.compile(PEER_NAME_PATTERN)
_DIGITS = re.compile(r"[0-9]{1,9}")
_RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
                      r"([Zz]|[+-][0-9]{2}:[0-9]{2})")


def _query(request: HttpRequest, allowed: frozenset[str]) -> dict[str, str]:
    """The query's parameters, each given once, each one the operation takes."""
    try:
        query = request.query
    except ValueError:
        raise errors.InvalidValue("Too many query parameters") from None
    values: dict[str, str] = {}
    for name, given in query.items():
        if name not in allowed:
            raise errors.InvalidValue(f"{name[:64]} is not a parameter of this operation",
                                      key=name[:64])
        if len(given) != 1:
            raise errors.InvalidValue(f"{name} must be given once", key=name)
        values[name] = given[0]
    return values


def _peer_param(values: dict[str, str]) -> str | None:
    peer = values.get("peer")
    if peer is not None and not _PEER_NAME.fullmatch(peer):
        raise errors.InvalidValue("peer must be a canonical peer name", key="peer")
    return peer


def _task_query(request: HttpRequest) -> TaskListQuery:
    values = _query(request, frozenset(
        {"direction", "peer", "agent", "state", "since", "pageSize", "pageToken"}))
    direction = values.get("direction", TASK_DIRECTION_INBOUND)
    if direction not in _DIRECTIONS:
        raise errors.InvalidValue("direction must be inbound or outbound", key="direction")
    state = values.get("state")
    if state is not None and state not in _TASK_STATES:
        raise errors.InvalidValue("state must be a task state", key="state",
                                  allowed=", ".join(sorted(_TASK_STATES)))
    agent = values.get("agent")
    if agent is not None and not 1 <= len(agent) <= 256:
        raise errors.InvalidValue("agent must be 1-256 characters", key="agent")
    since = values.get("since")
    if since is not None:
        since = _utc_time(since)
    size_text = values.get("pageSize", str(DEFAULT_PAGE))
    if not _DIGITS.fullmatch(size_text) or not 1 <= int(size_text) <= _MAX_PAGE:
        raise errors.InvalidValue(f"pageSize must be an integer from 1 to {_MAX_PAGE}",
                                  key="pageSize")
    token = values.get("pageToken", "0")
    if not _DIGITS.fullmatch(token) or len(token) > 5:
        raise errors.InvalidValue("pageToken is not a page token of this node", key="pageToken")
    return TaskListQuery(direction, _peer_param(values), agent, state, since, int(size_text),
                         int(token))


def _utc_time(text: str) -> str:
    """An RFC 3339 time as the store writes them (UTC, milliseconds, `Z`)."""
    try:
        moment = datetime.fromisoformat(text.upper()) if _RFC3339.fullmatch(text) else None
    except ValueError:
        moment = None
    if moment is None:
        raise errors.InvalidValue("since must be an RFC 3339 time, such as "
                                  "2026-01-31T12:00:00Z", key="since")
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


_VIAS = AUDIT_VIA_VALUES
_AUDIT_EVENTS = frozenset(get_args(AuditEvent))
_SETTING_NAMES = frozenset(get_args(SettingName))
_MAX_AUDIT = 1000


@_answered
async def list_audit(request: HttpRequest, ctx: AdminContext) -> Response:
    values = _query(request, frozenset({"event", "via", "peer", "key", "since", "limit"}))
    event, via, key = values.get("event"), values.get("via"), values.get("key")
    if event is not None and event not in _AUDIT_EVENTS:
        raise errors.InvalidValue("event must be an audit event", key="event",
                                  allowed=", ".join(sorted(_AUDIT_EVENTS)))
    if via is not None and via not in _VIAS:
        raise errors.InvalidValue("via must be admin_api or cli", key="via")
    if key is not None and key not in _SETTING_NAMES:
        raise errors.InvalidValue("key must be a runtime setting's name", key="key")
    since = values.get("since")
    limit_text = values.get("limit", "100")
    if not _DIGITS.fullmatch(limit_text) or not 1 <= int(limit_text) <= _MAX_AUDIT:
        raise errors.InvalidValue(f"limit must be an integer from 1 to {_MAX_AUDIT}",
                                  key="limit")
    return _answer(200, ctx.list_audit(event, via, _peer_param(values), key,
                                       None if since is None else _utc_time(since),
                                       int(limit_text)))


def _task_target(request: HttpRequest) -> tuple[str, str | None]:
    task_id = request.path_params["id"]
    if not 1 <= len(task_id) <= 256:
        raise errors.InvalidValue("id must be 1-256 characters", key="id")
    return task_id, _peer_param(_query(request, frozenset({"peer"})))


@_answered
async def list_tasks(request: HttpRequest, ctx: AdminContext) -> Response:
    return _answer(200, await ctx.list_tasks(_task_query(request)))


@_answered
async def get_task(request: HttpRequest, ctx: AdminContext) -> Response:
    return _answer(200, await ctx.get_task(*_task_target(request)))


@_answered
async def cancel_task(request: HttpRequest, ctx: AdminContext) -> Response:
    return _answer(200, await ctx.cancel_task(*_task_target(request)))


@_answered
async def task_events(request: HttpRequest, ctx: AdminContext) -> Response:
    events = await ctx.follow_task(*_task_target(request))  # UnknownTask: 404, before any
    return StreamingResponse(_sse(events), media_type=MEDIA_TYPE_TEXT_EVENT_STREAM,
                             headers={"Cache-Control": "no-store"})


async def _sse(events: AsyncIterator[Sequenced[StreamEvent]]) -> AsyncIterator[bytes]:
    async for item in events:
        data = item.raw if item.raw is not None else item.event.model_dump_json(
            exclude_none=True).encode()
        yield b"id: %d\ndata: %s\n\n" % (item.seq, data)
    yield b"event: end\ndata: {}\n\n"
