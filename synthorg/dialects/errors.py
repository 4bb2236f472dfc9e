"""A2A 1.0's `error.data`: an array of typed details, as the protobuf JSON mapping writes
google.rpc details (`V1ErrorDetails` in the spec). 0.3 answers keep their `ErrorData` object.

The reason of a code is its name in the spec (the generated constant's name, `TASK_NOT_FOUND`);
the codes A2A 1.0 itself defines are in its domain, the others (JSON-RPC's and this node's)
in this node's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from synthorg.generated import constants
from synthorg.generated.constants import (
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    V1_CONTENT_TYPE_NOT_SUPPORTED,
    V1_UNSUPPORTED_OPERATION,
    VERSION_NOT_SUPPORTED,
    RpcErrorSpec,
)
from synthorg.generated.models import V1BadRequest, V1ErrorInfo, V1FieldViolation, V1HttpError

A2A_DOMAIN = "a2a-protocol.org"
NODE_DOMAIN = "synthorg"
# By the whole spec, not the code: -32005 is A2A's ContentTypeNotSupported in 1.0 and this
# node's RateLimited otherwise.
_A2A_ERRORS = frozenset({TASK_NOT_FOUND, TASK_NOT_CANCELABLE, VERSION_NOT_SUPPORTED,
                         V1_CONTENT_TYPE_NOT_SUPPORTED, V1_UNSUPPORTED_OPERATION})
_REASONS = {
    value: name.removeprefix("V1_")
    for name, value in vars(constants).items()
    if isinstance(value, RpcErrorSpec)
}
_MAX_METADATA = 8


def error_details(error: RpcErrorSpec, data: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The 1.0 `error.data` for an error and its 0.3 `data`."""
    extras = {k: str(v)[:256] for k, v in (data or {}).items() if k != "errors"}
    info = V1ErrorInfo.model_validate({
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": _REASONS.get(error, "ERROR"),
        "domain": A2A_DOMAIN if error in _A2A_ERRORS else NODE_DOMAIN,
        **({"metadata": dict(list(extras.items())[:_MAX_METADATA])} if extras else {}),
    })
    details = [info.model_dump(mode="json", by_alias=True, exclude_none=True)]
    issues = (data or {}).get("errors")
    if issues:
        violations = [
            V1FieldViolation(
                field=".".join(str(part) for part in issue["loc"]),
                description=issue["msg"], reason=issue["type"],
            )
            for issue in issues
        ]
        bad = V1BadRequest.model_validate({
            "@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": violations,
        })
        details.append(bad.model_dump(mode="json", by_alias=True, exclude_none=True))
    return details


# -- the HTTP+JSON binding: an error as an HTTP status and google.rpc.Status ----------------
# A2A 1.0's own errors answer the statuses its table gives (section 5.4: TaskNotCancelable 400
# FAILED_PRECONDITION, as the official SDK does), but ContentTypeNotSupported: 415, the HTTP
# status for it, as the JSON-RPC gate and the official kit's HTTP+JSON tests have it. This
# node's own codes get the status that says the same in HTTP. A refusal made before the method
# (the gates, the body) keeps the status it is made with.
_HTTP_ERRORS: Mapping[RpcErrorSpec, tuple[int, str]] = {
    constants.PARSE_ERROR: (400, "INVALID_ARGUMENT"),
    constants.INVALID_REQUEST: (400, "INVALID_ARGUMENT"),
    constants.METHOD_NOT_FOUND: (404, "NOT_FOUND"),
    constants.INVALID_PARAMS: (400, "INVALID_ARGUMENT"),
    constants.INTERNAL_ERROR: (500, "INTERNAL"),
    TASK_NOT_FOUND: (404, "NOT_FOUND"),
    TASK_NOT_CANCELABLE: (400, "FAILED_PRECONDITION"),
    constants.UNAUTHENTICATED: (401, "UNAUTHENTICATED"),
    constants.PEER_NOT_ALLOWED: (403, "PERMISSION_DENIED"),
    constants.RATE_LIMITED: (429, "RESOURCE_EXHAUSTED"),
    constants.MESSAGE_ID_CONFLICT: (409, "ALREADY_EXISTS"),
    constants.TASK_TERMINAL: (400, "FAILED_PRECONDITION"),
    constants.UNKNOWN_AGENT: (404, "NOT_FOUND"),
    constants.TASK_BUSY: (409, "ABORTED"),
    constants.UNKNOWN_PEER: (404, "NOT_FOUND"),
    constants.PEER_UNAVAILABLE: (503, "UNAVAILABLE"),
    constants.DELEGATION_LOOP: (400, "FAILED_PRECONDITION"),
    VERSION_NOT_SUPPORTED: (400, "FAILED_PRECONDITION"),
    V1_CONTENT_TYPE_NOT_SUPPORTED: (415, "INVALID_ARGUMENT"),
    V1_UNSUPPORTED_OPERATION: (400, "FAILED_PRECONDITION"),
}
_STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                 404: "NOT_FOUND", 405: "UNIMPLEMENTED", 409: "ABORTED",
                 413: "INVALID_ARGUMENT", 415: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED",
                 500: "INTERNAL", 503: "UNAVAILABLE"}


def http_error(
    error: RpcErrorSpec,
    message: str | None = None,
    data: Mapping[str, Any] | None = None,
    status: int | None = None,
) -> tuple[int, bytes]:
    """(HTTP status, body) of an error in the HTTP+JSON binding: google.rpc.Status as JSON,
    its details those of 1.0's JSON-RPC error.data. `status` overrides the error's own (a
    refusal made on the request's headers or size keeps the status it is made with)."""
    code, name = _HTTP_ERRORS.get(error, (500, "INTERNAL"))
    if status is not None and status != code:
        code, name = status, _STATUS_NAMES.get(status, name)
    body = V1HttpError.model_validate({"error": {
        "code": code, "status": name, "message": message or error.message,
        "details": error_details(error, data),
    }})
    return code, body.__pydantic_serializer__.to_json(body, by_alias=True, exclude_none=True)
