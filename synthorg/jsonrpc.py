"""The JSON-RPC 2.0 envelope as bytes: a result, an error, a request.

Every envelope the node writes (its answers, its stream events, its refusals below the app,
its calls to peers) is built here, with the spec's version string and error codes (generated
constants). It imports nothing but those, so any layer may use it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from synthorg.generated.constants import JSONRPC_VERSION, RpcErrorSpec

RequestId = str | int | None

# A result's envelope around bytes already serialised (a model, an event as logged): one
# %-format fills it, so the result is neither parsed again nor copied more than once.
_RESULT = b'{"jsonrpc": %s, "id": %%s, "result": %%s}' % json.dumps(JSONRPC_VERSION).encode()
_REQUEST = (b'{"jsonrpc": %s, "id": %%s, "method": %%s, "params": %%s}'
            % json.dumps(JSONRPC_VERSION).encode())


def encoded_id(request_id: RequestId) -> bytes:
    """A request id as JSON, for `result` (a stream encodes its id once for every event)."""
    return json.dumps(request_id).encode()


def result(request_id: bytes, encoded: bytes) -> bytes:
    """A result envelope: `request_id` as `encoded_id` gives it, `encoded` the result's JSON."""
    return _RESULT % (request_id, encoded)


def error(
    spec: RpcErrorSpec,
    message: str | None = None,
    request_id: RequestId = None,
    data: Mapping[str, Any] | list[dict[str, Any]] | None = None,
) -> bytes:
    """An error envelope: the spec's code, `message` or else its canonical one, `data` if any."""
    body: dict[str, Any] = {"code": spec.code, "message": message or spec.message}
    if data is not None:
        body["data"] = data
    return json.dumps({"jsonrpc": JSONRPC_VERSION, "id": request_id, "error": body}).encode()


def request(method: str, params: Mapping[str, Any], request_id: str | int) -> bytes:
    """A request envelope around params given as JSON values."""
    return json.dumps(
        {"jsonrpc": JSONRPC_VERSION, "id": request_id, "method": method, "params": params}
    ).encode()


def method_of(params: BaseModel) -> str:
    """The method a generated params model is for: its `method` member (the discriminator
    the spec gives every params object; on the wire it is the envelope's, not a param)."""
    method = getattr(params, "method", None)
    if not isinstance(method, str):
        raise TypeError(f"{type(params).__name__} names no method")
    return method


def call(params: BaseModel, request_id: str | int) -> bytes:
    """A request envelope around a generated params model, as the node sends its calls to a
    peer: the model serialised once, without its `method` (the envelope's member)."""
    encoded = params.model_dump_json(by_alias=True, exclude_none=True, exclude={"method"})
    return _REQUEST % (encoded_id(request_id), json.dumps(method_of(params)).encode(),
                       encoded.encode())
