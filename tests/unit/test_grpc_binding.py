"""The gRPC binding's tables: every RPC of the vendored proto is a 1.0 method the node
serves, and every error the node answers has a gRPC status of its own."""

from __future__ import annotations

import grpc

from synthorg.gateway import dialect
from synthorg.gateway.replies import RPC_ERRORS
from synthorg.generated.constants import INTERNAL_ERROR, PEER_NOT_ALLOWED, RATE_LIMITED
from synthorg.grpc.service import SERVICE
from synthorg.grpc.status import STATUS, status_of


def test_every_rpc_of_the_service_is_a_1_0_method_and_back() -> None:
    rpcs = {method.name for method in SERVICE.methods}
    assert rpcs == set(dialect.V1.routes)
    for method in SERVICE.methods:
        route = dialect.V1.routes[method.name]
        assert (route.stream is not None) == method.server_streaming


def test_every_error_the_handlers_raise_has_a_status() -> None:
    assert set(RPC_ERRORS.values()) <= set(STATUS)
    assert INTERNAL_ERROR in STATUS


def test_a_rate_limit_carries_retry_info_and_a_refusal_its_reason() -> None:
    code, _, trailer = status_of(RATE_LIMITED, retry_after=3)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert b"google.rpc.RetryInfo" in trailer[0][1]
    code, message, trailer = status_of(PEER_NOT_ALLOWED)
    assert code == grpc.StatusCode.PERMISSION_DENIED and message == PEER_NOT_ALLOWED.message
    assert b"PEER_NOT_ALLOWED" in trailer[0][1]
