"""This node's calls to a peer in A2A 1.0's HTTP+JSON binding: each 1.0 call as its route.

The call is built as the same 1.0 params model the JSON-RPC 1.0 dialect sends (the client
builds every call so); here it becomes the proto's HTTP annotation: the route's path, its
path members filled in, and the rest in the body (`body: "*"`, POST) or the query (GET). The
routes are the spec's own (`GATEWAY_REST_*`), taken relative to the binding's base, which is
the peer's interface URL. An answer is the result itself; a refusal is an HTTP status with
google.rpc.Status, read back as the JSON-RPC error it stands for (its ErrorInfo reason names
the error), so callers see the same PeerRpcError whichever binding carried the call.
"""

from __future__ import annotations

import posixpath
from typing import Any, NamedTuple
from urllib.parse import quote, urlencode

from synthorg.dialects.outbound_v03 import OutboundParams, V03OutboundParams
from synthorg.generated import constants
from synthorg.generated.constants import (
    GATEWAY_REST_CANCEL_TASK,
    GATEWAY_REST_CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
    GATEWAY_REST_GET_TASK,
    GATEWAY_REST_SEND_MESSAGE,
    GATEWAY_REST_SEND_STREAMING_MESSAGE,
    GATEWAY_REST_SUBSCRIBE_TO_TASK,
    INTERNAL_ERROR,
    V1_CANCEL_TASK,
    V1_CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
    V1_GET_TASK,
    V1_SEND_MESSAGE,
    V1_SEND_STREAMING_MESSAGE,
    V1_SUBSCRIBE_TO_TASK,
    Operation,
    RpcErrorSpec,
)
from synthorg.jsonrpc import method_of

# Each 1.0 method this node calls and its route.
ROUTES: dict[str, Operation] = {
    V1_SEND_MESSAGE: GATEWAY_REST_SEND_MESSAGE,
    V1_SEND_STREAMING_MESSAGE: GATEWAY_REST_SEND_STREAMING_MESSAGE,
    V1_GET_TASK: GATEWAY_REST_GET_TASK,
    V1_CANCEL_TASK: GATEWAY_REST_CANCEL_TASK,
    V1_SUBSCRIBE_TO_TASK: GATEWAY_REST_SUBSCRIBE_TO_TASK,
    V1_CREATE_TASK_PUSH_NOTIFICATION_CONFIG: GATEWAY_REST_CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
}
# The binding's base in the spec's paths (/api/v1/a2a/rest): a route is its path after it.
REST_BASE = posixpath.commonpath([op.path for op in ROUTES.values()])
# An error's ErrorInfo reason is its name in the spec, without V1_ (`dialects/errors.py`;
# A2A 1.0's own errors are named so by every implementation): by reason, the error.
BY_REASON: dict[str, RpcErrorSpec] = {
    name.removeprefix("V1_"): value
    for name, value in vars(constants).items()
    if isinstance(value, RpcErrorSpec)
}
# A peer that names no reason we know: the error its HTTP status says.
_BY_STATUS: dict[int, RpcErrorSpec] = {
    400: constants.INVALID_PARAMS, 401: constants.UNAUTHENTICATED,
    403: constants.PEER_NOT_ALLOWED,
    404: constants.METHOD_NOT_FOUND, 405: constants.METHOD_NOT_FOUND, 409: constants.TASK_BUSY,
    415: constants.V1_CONTENT_TYPE_NOT_SUPPORTED, 429: constants.RATE_LIMITED,
    503: constants.PEER_UNAVAILABLE,
}
_PATH_MEMBER = {"{id}": "id", "{taskId}": "taskId"}


def default_rest_url(endpoint: str) -> str:
    """Where a peer of ours serves HTTP+JSON: the catalog endpoint's /api/v1/a2a/rest."""
    return endpoint.rstrip("/") + REST_BASE


class RestCall(NamedTuple):
    http_method: str
    url: str
    body: bytes | None


def rest_call(base: str, params: OutboundParams | V03OutboundParams) -> RestCall:
    """The HTTP request that makes a 1.0 call at a binding whose base URL is `base` (a 0.3
    call has no route: the client sends a call in 1.0 as it is built)."""
    op = ROUTES[method_of(params)]
    fields: dict[str, Any] = params.model_dump(mode="json", by_alias=True, exclude_none=True,
                                               exclude={"method"})
    path = op.path.removeprefix(REST_BASE)
    for placeholder, member in _PATH_MEMBER.items():
        if placeholder in path:
            path = path.replace(placeholder, quote(str(fields[member]), safe=""))
            if not op.has_body:
                del fields[member]
    url = base.rstrip("/") + path
    if op.has_body:
        body = params.model_dump_json(by_alias=True, exclude_none=True,
                                      exclude={"method"}).encode()
        return RestCall(op.method, url, body)
    query = {name: _query_value(value) for name, value in fields.items()}
    return RestCall(op.method, url + ("?" + urlencode(query) if query else ""), None)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def status_error(status: int, payload: Any) -> tuple[RpcErrorSpec, str] | None:
    """The error a google.rpc.Status answer stands for, with the peer's message; None when
    the body is not one."""
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        return None
    message = error.get("message")
    reason = None
    for detail in error.get("details") or []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith(
                "google.rpc.ErrorInfo"):
            reason = detail.get("reason")
            break
    spec = BY_REASON.get(reason) if isinstance(reason, str) else None
    if spec is None:
        spec = _BY_STATUS.get(status, INTERNAL_ERROR)
    return spec, message if isinstance(message, str) else spec.message
