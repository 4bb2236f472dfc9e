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
from synthorg.generated.models import V1BadRequest, V1ErrorInfo, V1FieldViolation

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
