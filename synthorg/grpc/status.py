"""The node's errors as gRPC statuses: A2A 1.0's mapping (its section 5.4) for the errors it
names, the nearest canonical code for the node's own. The details are those a 1.0 JSON-RPC
answer carries in `error.data` (`dialects/errors.py`: a `google.rpc.ErrorInfo`, and a
`google.rpc.BadRequest` listing invalid params), as a `google.rpc.Status` in the
`grpc-status-details-bin` trailer, where gRPC clients read rich errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

import grpc
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2

from synthorg.dialects.errors import error_details
from synthorg.generated.constants import (
    DELEGATION_LOOP,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MESSAGE_ID_CONFLICT,
    PEER_NOT_ALLOWED,
    PEER_UNAVAILABLE,
    RATE_LIMITED,
    TASK_BUSY,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    TASK_TERMINAL,
    UNAUTHENTICATED,
    UNKNOWN_AGENT,
    UNKNOWN_PEER,
    V1_UNSUPPORTED_OPERATION,
    VERSION_NOT_SUPPORTED,
    RpcErrorSpec,
)

Code = grpc.StatusCode
DETAILS_KEY = "grpc-status-details-bin"
_ = error_details_pb2  # registers ErrorInfo, BadRequest, RetryInfo for json_format

STATUS: Mapping[RpcErrorSpec, grpc.StatusCode] = {
    TASK_NOT_FOUND: Code.NOT_FOUND,
    TASK_NOT_CANCELABLE: Code.FAILED_PRECONDITION,
    V1_UNSUPPORTED_OPERATION: Code.FAILED_PRECONDITION,
    VERSION_NOT_SUPPORTED: Code.FAILED_PRECONDITION,
    INVALID_PARAMS: Code.INVALID_ARGUMENT,
    INVALID_REQUEST: Code.INVALID_ARGUMENT,
    UNAUTHENTICATED: Code.UNAUTHENTICATED,
    PEER_NOT_ALLOWED: Code.PERMISSION_DENIED,
    RATE_LIMITED: Code.RESOURCE_EXHAUSTED,
    # the node's own errors
    TASK_TERMINAL: Code.FAILED_PRECONDITION,
    TASK_BUSY: Code.FAILED_PRECONDITION,
    MESSAGE_ID_CONFLICT: Code.ALREADY_EXISTS,
    UNKNOWN_AGENT: Code.NOT_FOUND,
    UNKNOWN_PEER: Code.FAILED_PRECONDITION,
    DELEGATION_LOOP: Code.FAILED_PRECONDITION,
    PEER_UNAVAILABLE: Code.UNAVAILABLE,
    INTERNAL_ERROR: Code.INTERNAL,
}


def status_of(
    error: RpcErrorSpec, message: str | None = None, data: Mapping[str, Any] | None = None,
    retry_after: int | None = None,
) -> tuple[grpc.StatusCode, str, tuple[tuple[str, bytes], ...]]:
    """(code, message, trailing metadata) answering `error`."""
    code = STATUS.get(error, Code.INTERNAL)
    text = message or error.message
    details = error_details(error, data)
    if retry_after is not None:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": f"{retry_after}s"})
    status = json_format.ParseDict(
        {"code": code.value[0], "message": text, "details": details}, status_pb2.Status()
    )
    return code, text, ((DETAILS_KEY, status.SerializeToString()),)


async def abort(
    context: grpc.aio.ServicerContext[Any, Any], error: RpcErrorSpec, message: str | None = None,
    data: Mapping[str, Any] | None = None, retry_after: int | None = None,
) -> NoReturn:
    """End the call with `error`'s status (raises, as `context.abort` does)."""
    code, text, trailer = status_of(error, message, data, retry_after)
    await context.abort(code, text, trailing_metadata=trailer)
    raise AssertionError("unreachable: abort raises")
