"""A result as JSON-RPC bytes, and the mapping from the node's errors to JSON-RPC errors.

This is the edge: services raise `synthorg.errors` in domain terms and only here do they
become codes. The codes and their canonical messages are the spec's (generated constants);
the envelope around them is `synthorg.jsonrpc`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from synthorg import errors, jsonrpc
from synthorg.generated.constants import (
    DELEGATION_LOOP,
    INVALID_PARAMS,
    MESSAGE_ID_CONFLICT,
    PEER_UNAVAILABLE,
    TASK_BUSY,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    TASK_TERMINAL,
    UNKNOWN_AGENT,
    UNKNOWN_PEER,
    V1_UNSUPPORTED_OPERATION,
    RpcErrorSpec,
)
from synthorg.settled import json_of

RequestId = jsonrpc.RequestId

# Domain error -> the JSON-RPC error it is answered with (HTTP 200).
RPC_ERRORS: Mapping[type[errors.SynthorgError], RpcErrorSpec] = {
    errors.TaskNotFound: TASK_NOT_FOUND,
    errors.TaskNotCancelable: TASK_NOT_CANCELABLE,
    errors.TaskTerminal: TASK_TERMINAL,
    errors.TaskBusy: TASK_BUSY,
    errors.MessageIdConflict: MESSAGE_ID_CONFLICT,
    errors.UnknownAgent: UNKNOWN_AGENT,
    errors.InvalidParams: INVALID_PARAMS,
    errors.DelegationLoop: DELEGATION_LOOP,
    errors.UnknownPeer: UNKNOWN_PEER,
    errors.PeerUnavailable: PEER_UNAVAILABLE,
    errors.UnsupportedOperation: V1_UNSUPPORTED_OPERATION,  # raised in the 1.0 dialect only
}


def rpc_error(error: errors.SynthorgError) -> tuple[RpcErrorSpec, str, dict[str, Any] | None]:
    """(code, message, data) for a domain error; KeyError when it has no JSON-RPC form."""
    spec = RPC_ERRORS[type(error)]
    return spec, error.message or spec.message, dict(error.detail) or None


def encoded(result: BaseModel | list[Any] | None) -> bytes:
    """A result as JSON bytes, serialised once (the JSON names, no null members); a settled
    model's (a task version's, see `synthorg.settled`) made once for all its answers."""
    if result is None:
        return b"null"
    if isinstance(result, list):  # a list of models (tasks/pushNotificationConfig/list)
        return b"[" + b", ".join(encoded(item) for item in result) + b"]"
    return json_of(result)


def result_body(request_id: RequestId, result: BaseModel | list[Any] | None) -> bytes:
    """The result serialised once, straight into its envelope."""
    return jsonrpc.result(jsonrpc.encoded_id(request_id), encoded(result))
