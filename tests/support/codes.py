"""The JSON-RPC error codes as the wire carries them (ints), from the spec's generated names."""

from __future__ import annotations

from synthorg.generated import constants as spec

PARSE_ERROR = spec.PARSE_ERROR.code
INVALID_REQUEST = spec.INVALID_REQUEST.code
METHOD_NOT_FOUND = spec.METHOD_NOT_FOUND.code
INVALID_PARAMS = spec.INVALID_PARAMS.code
INTERNAL_ERROR = spec.INTERNAL_ERROR.code
TASK_NOT_FOUND = spec.TASK_NOT_FOUND.code
TASK_NOT_CANCELABLE = spec.TASK_NOT_CANCELABLE.code
UNAUTHENTICATED = spec.UNAUTHENTICATED.code
PEER_NOT_ALLOWED = spec.PEER_NOT_ALLOWED.code
MESSAGE_ID_CONFLICT = spec.MESSAGE_ID_CONFLICT.code
TASK_TERMINAL = spec.TASK_TERMINAL.code
TASK_BUSY = spec.TASK_BUSY.code
UNKNOWN_AGENT = spec.UNKNOWN_AGENT.code
RATE_LIMITED = spec.RATE_LIMITED.code
UNKNOWN_PEER = spec.UNKNOWN_PEER.code
PEER_UNAVAILABLE = spec.PEER_UNAVAILABLE.code
DELEGATION_LOOP = spec.DELEGATION_LOOP.code
