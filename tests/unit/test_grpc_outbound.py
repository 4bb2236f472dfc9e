"""The gRPC binding of the outbound client: which targets a card's GRPC interface may name
and when it is chosen (synthorg/dialects/outbound.py), and how a gRPC refusal reads back
(synthorg/delegation/grpc_binding.py) against what the node's own gRPC server answers
(synthorg/grpc/status.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from synthorg.cards.peer_card import read_peer_card
from synthorg.delegation.client import A2AClient, RetryPolicy
from synthorg.delegation.errors import (
    PeerMisconfigured,
    PeerProtocolError,
    PeerRpcError,
    PeerUnavailable,
)
from synthorg.delegation.grpc_binding import GrpcCall, error_of
from synthorg.delegation.grpc_peers import grpc_allowed
from synthorg.dialects.outbound import (
    BindingUnusable,
    GrpcTarget,
    PeerDialect,
    choose,
    grpc_target,
    grpc_url,
)
from synthorg.generated import constants as spec
from synthorg.grpc.status import status_of
from synthorg.store.catalog import PeerRecord

ENDPOINT = "http://127.0.0.1:8100"
SECURE = "https://node.example"
DEFAULT = ENDPOINT + "/api/v1/a2a/"
DEFAULT_REST = ENDPOINT + "/api/v1/a2a/rest"
RPC, REST = ENDPOINT + "/rpc", ENDPOINT + "/rest"


def card(*interfaces: tuple[str, str, str]) -> Any:
    return read_peer_card({"name": "p", "skills": [], "url": RPC, "supportedInterfaces": [
        {"url": url, "protocolBinding": binding, "protocolVersion": version}
        for binding, version, url in interfaces
    ]})


def chosen(read: Any, configured: str | None = None, endpoint: str = ENDPOINT,
           mtls: bool = False) -> PeerDialect:
    return choose(read, endpoint, DEFAULT, configured, DEFAULT_REST, mtls=mtls)


@pytest.mark.parametrize(("url", "target"), [
    ("127.0.0.1:50051", GrpcTarget("127.0.0.1", 50051, None)),
    ("Node.Example:443", GrpcTarget("node.example", 443, None)),
    ("[::1]:9000", GrpcTarget("::1", 9000, None)),
    ("grpc://127.0.0.1:1", GrpcTarget("127.0.0.1", 1, False)),
    ("GRPCS://node.example:8443/", GrpcTarget("node.example", 8443, True)),
])
def test_a_grpc_target_is_read(url: str, target: GrpcTarget) -> None:
    assert grpc_target(url) == target


@pytest.mark.parametrize("url", [
    "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "http://127.0.0.1:1", "h:1/path",
    "user@h:1", "grpc://h", "dns:///h:1", "[zz]:1", "",
])
def test_what_is_not_a_grpc_target_is_refused(url: str) -> None:
    assert grpc_target(url) is None


def test_a_target_is_used_on_the_endpoints_host_only_and_never_in_the_clear_for_https() -> None:
    assert grpc_url("127.0.0.1:50051", ENDPOINT) == "grpc://127.0.0.1:50051"
    assert grpc_url("node.example:8443", SECURE) == "grpcs://node.example:8443"
    assert grpc_url("grpcs://127.0.0.1:1", ENDPOINT) == "grpcs://127.0.0.1:1"
    assert grpc_url("[::1]:5", "http://[::1]:8100") == "grpc://[::1]:5"
    assert grpc_url("evil.example:50051", ENDPOINT) is None  # credentials stay on the host
    assert grpc_url("grpc://node.example:8443", SECURE) is None  # a downgrade
    assert grpc_url("localhost:50051", ENDPOINT) is None  # another name is another host


def test_grpc_is_chosen_when_configured_or_first_on_the_card() -> None:
    listed = card(("JSONRPC", "1.0", RPC), ("GRPC", "1.0", "127.0.0.1:50051"))
    assert chosen(listed) == PeerDialect("1.0", RPC, "JSONRPC")
    assert chosen(listed, "GRPC") == PeerDialect("1.0", "grpc://127.0.0.1:50051", "GRPC")
    first = card(("GRPC", "1.0", "127.0.0.1:50051"), ("JSONRPC", "1.0", RPC))
    assert chosen(first) == PeerDialect("1.0", "grpc://127.0.0.1:50051", "GRPC")
    assert chosen(first, "JSONRPC") == PeerDialect("1.0", RPC, "JSONRPC")
    # a target on another host, or in 0.3, is passed over
    other = card(("GRPC", "1.0", "evil.example:50051"), ("HTTP+JSON", "1.0", REST))
    assert chosen(other) == PeerDialect("1.0", REST, "HTTP+JSON")
    assert chosen(card(("GRPC", "0.3", "127.0.0.1:1"), ("JSONRPC", "1.0", RPC))).binding == (
        "JSONRPC")


def test_grpc_configured_without_a_usable_target_is_refused_not_replaced() -> None:
    for read in (None, card(("JSONRPC", "1.0", RPC)),
                 card(("GRPC", "1.0", "evil.example:50051"))):
        with pytest.raises(BindingUnusable, match=r"lists no A2A 1\.0 gRPC interface"):
            chosen(read, "GRPC")


def test_an_mtls_peer_is_not_called_over_grpc() -> None:
    first = card(("GRPC", "1.0", "127.0.0.1:50051"), ("JSONRPC", "1.0", RPC))
    # configured so, the delegator refuses first (delegation/grpc_peers.py); asked anyway,
    # the card's gRPC interface is not usable
    with pytest.raises(BindingUnusable):
        chosen(first, "GRPC", mtls=True)
    # the card's order alone: its gRPC interface is passed over
    assert chosen(first, mtls=True) == PeerDialect("1.0", RPC, "JSONRPC")


def test_a_grpc_only_card_is_read() -> None:
    read = read_peer_card({"name": "p", "skills": [], "supportedInterfaces": [
        {"url": "127.0.0.1:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]})
    assert read.url == "127.0.0.1:50051"
    assert chosen(read) == PeerDialect("1.0", "grpc://127.0.0.1:50051", "GRPC")


async def _never(_: float) -> None:
    raise AssertionError("not retried")


CALL = GrpcCall("peer-b", "grpc://127.0.0.1:1", {}, 7.0, 1024, None, RetryPolicy(), _never)


def refusal(code: grpc.StatusCode, details: str,
            trailer: tuple[tuple[str, bytes], ...] = ()) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(*trailer), details)


@pytest.mark.parametrize("error", [
    spec.TASK_NOT_FOUND, spec.TASK_NOT_CANCELABLE, spec.UNKNOWN_AGENT, spec.TASK_BUSY,
    spec.INVALID_PARAMS, spec.V1_UNSUPPORTED_OPERATION, spec.UNAUTHENTICATED,
    spec.PEER_NOT_ALLOWED, spec.MESSAGE_ID_CONFLICT,
])
def test_a_grpc_status_reads_back_as_its_error(error: spec.RpcErrorSpec) -> None:
    # what the node's own gRPC server answers, read by the client
    code, message, trailer = status_of(error, "said so")
    read = error_of(CALL, refusal(code, message, trailer))
    assert isinstance(read, PeerRpcError)
    assert (read.code, read.message, read.transport_status) == (error.code, "said so", code.name)
    assert "(gRPC " + code.name + ")" in str(read)


def test_a_status_without_a_reason_is_read_by_its_code() -> None:
    read = error_of(CALL, refusal(grpc.StatusCode.NOT_FOUND, "no such task"))
    assert isinstance(read, PeerRpcError)
    assert (read.code, read.http_status) == (spec.TASK_NOT_FOUND.code, 404)
    unknown = error_of(CALL, refusal(grpc.StatusCode.DATA_LOSS, ""))
    assert isinstance(unknown, PeerRpcError) and unknown.code == spec.INTERNAL_ERROR.code
    assert unknown.message == spec.INTERNAL_ERROR.message


def test_a_deadline_and_an_oversized_answer_are_not_refusals() -> None:
    late = error_of(CALL, refusal(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded"))
    assert isinstance(late, PeerUnavailable) and "within 7s" in str(late)
    large = error_of(CALL, refusal(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                   "Received message larger than max (2048 vs. 1024)"))
    assert isinstance(large, PeerProtocolError) and "larger than 1024 bytes" in str(large)
    # the peer's own bound on what it receives: our request was too large for it
    theirs = error_of(CALL, refusal(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                    "Received message larger than max (4096 vs. 2048)"))
    assert isinstance(theirs, PeerRpcError) and theirs.code == spec.INVALID_REQUEST.code


def test_a_client_refuses_to_call_an_mtls_peer_over_grpc_without_retrying() -> None:
    record = PeerRecord("peer-b", "https://127.0.0.1:1", "mtls", "sha256//" + "A" * 43 + "=",
                        "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")
    client = A2AClient(record, "node-a", lambda: 7.0, sleep=_never,
                       dialect=PeerDialect("1.0", "grpcs://127.0.0.1:1", "GRPC"))
    with pytest.raises(PeerMisconfigured, match="authenticates by client certificate"):
        asyncio.run(client.get_task("task-1"))
    assert not grpc_allowed("mtls") and grpc_allowed("api_key") and grpc_allowed("bearer")
