"""The admin API's operations (spec/openapi.yaml, tag `admin`).

`synthorg.admin.middleware.AdminMiddleware` has authenticated the operator and, for PUT and
POST, buffered the body (at most 64 KiB, JSON) before any of these run. Bodies are validated
with the generated models (strict: unknown keys, wrong types and `null`s are refused); the
values themselves by the same code the CLI uses (`synthorg.admin.service`), which audits every
change with `via="admin_api"`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from connexion import request
from connexion.lifecycle import ConnexionResponse
from pydantic import BaseModel, ValidationError

from synthorg.admin.errors import AdminProblem, error_document, json_bytes
from synthorg.admin.middleware import SCOPE_ADMIN, SCOPE_ADMIN_BODY
from synthorg.admin.service import peer_json, setting_definition, setting_json
from synthorg.generated.models import PeerCreate, PeerReplace, SettingWrite
from synthorg.observability.events.admin import INTERNAL_ERROR, REQUEST_REFUSED
from synthorg.observability.log import emit
from synthorg.store.secretbox import SecretBoxError

Handler = TypeVar("Handler", bound=Callable[..., Awaitable[ConnexionResponse]])
M = TypeVar("M", bound=BaseModel)
PEERS_PATH = "/api/v1/admin/peers"


def _answer(status: int, document: Any = None, headers: dict[str, str] | None = None
            ) -> ConnexionResponse:
    all_headers = {"Cache-Control": "no-store", **(headers or {})}
    if document is None:
        return ConnexionResponse(status_code=status, headers=all_headers)
    return ConnexionResponse(status_code=status, body=json_bytes(document),
                             content_type="application/json", headers=all_headers)


def _admin_operation(handler: Handler) -> Handler:
    """Fail closed without the middleware's mark; turn refusals and faults into AdminErrors."""

    @functools.wraps(handler)
    async def wrapper(*args: Any, **kwargs: Any) -> ConnexionResponse:
        if request.scope.get(SCOPE_ADMIN) is not True:
            return _answer(401, error_document("unauthorized", "Admin token required"),
                           {"WWW-Authenticate": 'Bearer realm="synthorg-admin"'})
        try:
            return await handler(*args, **kwargs)
        except AdminProblem as problem:
            emit(REQUEST_REFUSED, level="warning", operation=handler.__name__,
                 status=problem.status, error=problem.error, key=problem.key)
            return _answer(problem.status, problem.body())
        except SecretBoxError as exc:  # its messages never carry keys or secrets
            emit(INTERNAL_ERROR, level="error", operation=handler.__name__,
                 reason="secretbox", detail=str(exc))
            return _answer(500, error_document("internal_error", str(exc)))
        except Exception as exc:
            emit(INTERNAL_ERROR, level="error", operation=handler.__name__,
                 reason=type(exc).__name__)
            return _answer(500, error_document("internal_error", "Internal error"))

    return wrapper  # type: ignore[return-value]


def _node() -> Any:
    return request.scope["synthorg.node"]


def _context() -> dict[str, object]:
    client = request.scope.get("client")
    return {"client": str(client[0]) if client else None}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _body(model: type[M]) -> tuple[M, dict[str, Any]]:
    """The buffered body as `model` (strict), and as the plain JSON it was sent as."""
    raw: bytes = request.scope.get(SCOPE_ADMIN_BODY, b"")
    try:
        document = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise AdminProblem(400, "invalid_body", "The body is not UTF-8 JSON") from None
    if not isinstance(document, dict):
        raise AdminProblem(400, "invalid_body", "The body must be a JSON object")
    try:
        parsed = model.model_validate(document)
    except ValidationError as exc:
        raise _invalid(exc) from None
    return parsed, document


def _invalid(exc: ValidationError) -> AdminProblem:
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
    return AdminProblem(400, "invalid_body", message, key=loc)


# -- settings ----------------------------------------------------------------------------------


@_admin_operation
async def list_settings() -> ConnexionResponse:
    views = _node().admin.settings.list()
    return _answer(200, {"settings": [setting_json(view) for view in views]})


@_admin_operation
async def get_setting(name: str) -> ConnexionResponse:
    return _answer(200, setting_json(_node().admin.settings.get(name)))


@_admin_operation
async def put_setting(name: str) -> ConnexionResponse:
    settings = _node().admin.settings
    definition = setting_definition(name)  # an unknown name is 404 whatever the body
    try:
        _, document = _body(SettingWrite)
    except AdminProblem as problem:
        if problem.key == "value" and not problem.message.endswith(" is required"):
            # Not a number: say what the setting takes, as for a number out of range.
            raise AdminProblem(400, "invalid_value",
                               f"{definition.name} must be {definition.describe_range()}",
                               key=definition.name, allowed=definition.describe_range()
                               ) from None
        raise
    # The JSON value as sent (the model reads every number as a float): an integer setting
    # must be sent a whole JSON number, and is kept as one.
    view, _, _ = settings.set(name, document["value"], via="admin_api", **_context())
    return _answer(200, setting_json(view))


@_admin_operation
async def reset_setting(name: str) -> ConnexionResponse:
    view, _, _ = _node().admin.settings.reset(name, via="admin_api", **_context())
    return _answer(200, setting_json(view))


# -- peers -------------------------------------------------------------------------------------


@_admin_operation
async def list_peers() -> ConnexionResponse:
    return _answer(200, {"peers": [peer_json(r) for r in _node().admin.peers.list()]})


@_admin_operation
async def create_peer() -> ConnexionResponse:
    body, _ = _body(PeerCreate)
    record = _node().admin.peers.create(body.name, body.endpoint, body.scheme, body.secret,
                                        via="admin_api", **_context())
    return _answer(201, peer_json(record), {"Location": f"{PEERS_PATH}/{record.name}"})


@_admin_operation
async def get_peer(name: str) -> ConnexionResponse:
    return _answer(200, peer_json(_node().admin.peers.get(name)))


@_admin_operation
async def replace_peer(name: str) -> ConnexionResponse:
    peers = _node().admin.peers
    peers.require(name)  # an unknown name is 404 whatever the body
    body, _ = _body(PeerReplace)
    record = peers.replace(name, body.endpoint, body.scheme, body.secret, via="admin_api",
                           **_context())
    return _answer(200, peer_json(record))


@_admin_operation
async def delete_peer(name: str) -> ConnexionResponse:
    _node().admin.peers.delete(name, via="admin_api", **_context())
    return _answer(204)


# -- status ------------------------------------------------------------------------------------


@_admin_operation
async def status() -> ConnexionResponse:
    node = _node()
    # Reading the setting picks up a write made by another process (the CLI, a replica) and
    # resizes the cache through the settings listener; the resize here covers the rest.
    bound = node.settings.card_cache_max_entries
    cache = node.discovery.cache
    if cache.max_entries != bound:
        node.discovery.resize(bound)
    return _answer(200, {
        "a2aEnabled": bool(node.enabled),
        "cardCacheEntries": len(cache),
        "cardCacheMaxEntries": cache.max_entries,
    })
