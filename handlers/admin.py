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
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.responses import Response

from handlers.context import AdminContext, HttpRequest
from synthorg import errors
from synthorg.generated.constants import ADMIN_LIST_PEERS
from synthorg.generated.models import (
    PeerCardKeyWrite,
    PeerCreate,
    PeerRateLimitWrite,
    PeerReplace,
    SettingWrite,
)
from synthorg.http.numbers import NumberTooLong, json_int
from synthorg.observability.events.admin import INTERNAL_ERROR, REQUEST_REFUSED
from synthorg.observability.log import emit

Operation = Callable[[HttpRequest, AdminContext], Awaitable[Response]]
M = TypeVar("M", bound=BaseModel)
PEERS_PATH = ADMIN_LIST_PEERS.path

# Domain error -> (HTTP status, AdminError code).
_REFUSALS: dict[type[errors.SynthorgError], tuple[int, str]] = {
    errors.InvalidValue: (400, "invalid_value"),
    errors.UnknownSetting: (404, "unknown_setting"),
    errors.UnknownPeer: (404, "unknown_peer"),
    errors.PeerExists: (409, "peer_exists"),
}


class InvalidBody(errors.SynthorgError):
    """The body is not a JSON object of the operation's schema (400 invalid_body)."""


_REFUSALS[InvalidBody] = (400, "invalid_body")


def _document(error: str, message: str, key: object = None, allowed: object = None
              ) -> dict[str, Any]:
    document: dict[str, Any] = {"error": error, "message": message}
    if key is not None:
        document["key"] = key
    if allowed is not None:
        document["allowed"] = allowed
    return document


def _answer(status: int, document: Any = None, headers: dict[str, str] | None = None
            ) -> Response:
    all_headers = {"Cache-Control": "no-store", **(headers or {})}
    if document is None:
        return Response(status_code=status, headers=all_headers)
    body = json.dumps(document, separators=(",", ":")).encode()
    return Response(body, status_code=status, media_type="application/json",
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
                return _answer(500, _document("internal_error", str(problem)))
            if refusal is None:
                return _fault(operation, problem)
            status, error = refusal
            key, allowed = problem.detail.get("key"), problem.detail.get("allowed")
            emit(REQUEST_REFUSED, level="warning", operation=operation.__name__,
                 status=status, error=error, key=key)
            return _answer(status, _document(error, str(problem), key, allowed))
        except Exception as exc:
            return _fault(operation, exc)

    return wrapper


def _fault(operation: Operation, exc: Exception) -> Response:
    emit(INTERNAL_ERROR, level="error", operation=operation.__name__, reason=type(exc).__name__)
    return _answer(500, _document("internal_error", "Internal error"))


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
