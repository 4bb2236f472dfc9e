"""This node's calls to a peer in A2A 1.0's gRPC binding: each 1.0 call as its RPC.

The call is built as the same 1.0 params model the JSON-RPC 1.0 dialect sends (the client
builds every call so), whose method name is the RPC's (`SendMessage`, `GetTask`, ...);
its document becomes the request message by the protobuf JSON mapping, and the response
message's document is the result, exactly what a 1.0 JSON-RPC peer answers, so the client
reads it back as it does theirs. The channel goes to the dialect's target
(`grpcs://host:port`: TLS, trusting what the node's HTTPS calls trust and presenting the
node's certificate; `grpc://host:port`: in the clear, as to an http endpoint); the call's
metadata carries the same headers as an HTTP call, lower-case (gRPC's metadata keys are).

A unary call has the client's timeout as its deadline and is retried as an HTTP call is:
UNAVAILABLE (the peer cannot be reached, or is restarting) and a rate-limit refusal (after
its RetryInfo) again, with the same backoff. A response past the client's bound is refused
by the channel before it is read. A refusal's `google.rpc.Status` (the
`grpc-status-details-bin` trailer) names the error by its ErrorInfo reason, read as the
HTTP+JSON binding reads it; a status without one is the error its code stands for (A2A
1.0's mapping read backwards: NOT_FOUND is a task not found), so callers see the same
PeerRpcError whichever binding carried the call. A stream has no deadline (it lives as long
as the task); HTTP/2 keep-alive pings, at the interval servers admit by default, find a
connection that died.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import certifi
import grpc
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import DecodeError, Message
from google.rpc import error_details_pb2, status_pb2

from synthorg.delegation.errors import (
    PeerProtocolError,
    PeerRpcError,
    PeerUnavailable,
    RequestInvalid,
)
from synthorg.delegation.rest_binding import BY_REASON
from synthorg.dialects.outbound_v03 import OutboundParams
from synthorg.generated import constants
from synthorg.generated.constants import INTERNAL_ERROR, INVALID_REQUEST, RpcErrorSpec
from synthorg.generated.grpc import a2a_pb2
from synthorg.jsonrpc import method_of
from synthorg.observability.outbound import trace_headers

if TYPE_CHECKING:
    from synthorg.delegation.client import RetryPolicy

SERVICE = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"]
DETAILS_KEY = "grpc-status-details-bin"
KEEPALIVE_MS = 300_000  # the least interval a gRPC server admits pings at by default
Code = grpc.StatusCode
# A status that names no reason we know: the error its code stands for (A2A 1.0, 5.4).
BY_CODE: Mapping[grpc.StatusCode, RpcErrorSpec] = {
    Code.NOT_FOUND: constants.TASK_NOT_FOUND,
    Code.INVALID_ARGUMENT: constants.INVALID_PARAMS,
    Code.UNAUTHENTICATED: constants.UNAUTHENTICATED,
    Code.PERMISSION_DENIED: constants.PEER_NOT_ALLOWED,
    Code.FAILED_PRECONDITION: constants.V1_UNSUPPORTED_OPERATION,
    Code.UNIMPLEMENTED: constants.V1_UNSUPPORTED_OPERATION,
    Code.ALREADY_EXISTS: constants.MESSAGE_ID_CONFLICT,
    Code.RESOURCE_EXHAUSTED: constants.RATE_LIMITED,
}
# The HTTP status each code stands for (google.rpc's own mapping), for PeerRpcError.
HTTP_STATUS: Mapping[grpc.StatusCode, int] = {
    Code.INVALID_ARGUMENT: 400, Code.FAILED_PRECONDITION: 400, Code.OUT_OF_RANGE: 400,
    Code.UNAUTHENTICATED: 401, Code.PERMISSION_DENIED: 403, Code.NOT_FOUND: 404,
    Code.ALREADY_EXISTS: 409, Code.ABORTED: 409, Code.RESOURCE_EXHAUSTED: 429,
    Code.CANCELLED: 499, Code.UNIMPLEMENTED: 501, Code.UNAVAILABLE: 503,
    Code.DEADLINE_EXCEEDED: 504,
}
_ = error_details_pb2  # registers ErrorInfo and RetryInfo for the details' Any


@dataclass(frozen=True)
class GrpcCall:
    """What one call needs from the client: who it is to, how, and within what bounds."""

    peer: str
    target: str  # grpc://host:port or grpcs://host:port
    headers: Mapping[str, str]
    timeout: float
    max_response_bytes: int
    credentials: grpc.ChannelCredentials | None  # None: the public CAs (`public_roots`)
    retry: RetryPolicy
    sleep: Callable[[float], Awaitable[None]]


@functools.cache
def public_roots() -> grpc.ChannelCredentials:
    """TLS trusting the public CAs httpx trusts (certifi's), as the node's HTTPS calls do
    without `server.tls`."""
    return grpc.ssl_channel_credentials(root_certificates=Path(certifi.where()).read_bytes())


def _message_class(method: MethodDescriptor, output: bool) -> type[Message]:
    return message_factory.GetMessageClass(method.output_type if output else method.input_type)


def _channel(call: GrpcCall) -> grpc.aio.Channel:
    scheme, _, address = call.target.partition("://")
    options = [
        ("grpc.max_receive_message_length", call.max_response_bytes),
        ("grpc.enable_retries", 0),  # retried here, as every binding's calls are
        ("grpc.keepalive_time_ms", KEEPALIVE_MS),
    ]
    if scheme == "grpcs":
        credentials = call.credentials or public_roots()
        return grpc.aio.secure_channel(address, credentials, options=options)
    return grpc.aio.insecure_channel(address, options=options)


def _metadata(call: GrpcCall) -> tuple[tuple[str, str], ...]:
    return tuple((name.lower(), value) for name, value in trace_headers(dict(call.headers)).items())


def _request(params: OutboundParams) -> tuple[MethodDescriptor, Message]:
    """The RPC a 1.0 call is, and its request message (the params' document, as the JSON
    mapping reads it)."""
    method = SERVICE.methods_by_name[method_of(params)]
    document = params.model_dump(mode="json", by_alias=True, exclude_none=True,
                                 exclude={"method"})
    try:
        message = json_format.ParseDict(document, _message_class(method, output=False)())
    except json_format.ParseError:
        raise RequestInvalid(f"not a valid {method.name} request") from None
    return method, message


def _path(method: MethodDescriptor) -> str:
    return f"/{SERVICE.full_name}/{method.name}"


def _result(message: Message) -> Any:
    return json_format.MessageToDict(message)


def _deserializer(cls: type[Message]) -> Callable[[bytes], Message]:
    def parse(data: bytes) -> Message:
        return cls.FromString(data)

    return parse


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()


async def unary(call: GrpcCall, params: OutboundParams) -> Any:
    """One unary call, with retries: the response's document (its JSON mapping)."""
    method, request = _request(params)
    problem = "no attempt made"
    for attempt in range(call.retry.attempts):
        retry_after: float | None = None
        async with _channel(call) as channel:
            rpc = channel.unary_unary(
                _path(method), request_serializer=_serialize,
                response_deserializer=_deserializer(_message_class(method, output=True)),
            )
            try:
                response = await rpc(request, metadata=_metadata(call), timeout=call.timeout)
            except grpc.aio.AioRpcError as exc:
                retry_after, problem = _transient(call, exc)
            else:
                return _result(response)
        if attempt + 1 < call.retry.attempts:
            await call.sleep(call.retry.delay(attempt, retry_after))
    raise PeerUnavailable(f"{call.peer}: gave up after {call.retry.attempts} attempts ({problem})")


def _transient(call: GrpcCall, exc: grpc.aio.AioRpcError) -> tuple[float | None, str]:
    """A failure to try again (its RetryInfo delay, and what it was), or the error raised."""
    code = exc.code()
    if code == Code.UNAVAILABLE:
        return None, "UNAVAILABLE"
    status = _status(exc)
    if code == Code.RESOURCE_EXHAUSTED and status is not None:
        found = _details(status)
        if found[0] == constants.RATE_LIMITED:
            return found[1], "RESOURCE_EXHAUSTED"
    raise error_of(call, exc) from None


async def stream(call: GrpcCall, params: OutboundParams) -> AsyncGenerator[Any, None]:
    """A server-streaming call: each response's document, until the peer ends the stream.
    Not retried: the follower resubscribes after a stream that broke."""
    method, request = _request(params)
    async with _channel(call) as channel:
        rpc = channel.unary_stream(
            _path(method), request_serializer=_serialize,
            response_deserializer=_deserializer(_message_class(method, output=True)),
        )
        responses = rpc(request, metadata=_metadata(call))
        try:
            async for response in responses:
                yield _result(response)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == Code.UNAVAILABLE:
                raise PeerUnavailable(f"{call.peer}: the stream broke (UNAVAILABLE)") from None
            raise error_of(call, exc) from None
        finally:
            responses.cancel()


def _status(exc: grpc.aio.AioRpcError) -> status_pb2.Status | None:
    """The google.rpc.Status a refusal carries in its trailer, if it is one."""
    for key, value in exc.trailing_metadata() or ():
        if key == DETAILS_KEY and isinstance(value, bytes):
            try:
                return status_pb2.Status.FromString(value)
            except DecodeError:
                return None
    return None


def _details(status: status_pb2.Status) -> tuple[RpcErrorSpec | None, float | None]:
    """The error the status's ErrorInfo reason names, and its RetryInfo delay."""
    spec: RpcErrorSpec | None = None
    delay: float | None = None
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR) and spec is None:
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            spec = BY_REASON.get(info.reason)
        elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            detail.Unpack(retry)
            delay = _seconds(retry.retry_delay)
    return spec, delay


def _seconds(duration: Duration) -> float | None:
    seconds = duration.seconds + duration.nanos / 1e9
    return seconds if seconds >= 0 else None


def error_of(call: GrpcCall, exc: grpc.aio.AioRpcError) -> Exception:
    """A failed call as the error every binding raises for it."""
    code = exc.code()
    text = exc.details() or ""
    if code == Code.DEADLINE_EXCEEDED:
        return PeerUnavailable(f"{call.peer}: no answer within {call.timeout:g}s")
    status = _status(exc)
    if code == Code.RESOURCE_EXHAUSTED and status is None and "larger than max" in text:
        if text.endswith(f"vs. {call.max_response_bytes})"):
            # the channel's own refusal: the peer's response is past this client's bound
            return PeerProtocolError(
                f"{call.peer}: response larger than {call.max_response_bytes} bytes")
        # the peer's: the request is past its bound (HTTP's 413)
        return PeerRpcError(INVALID_REQUEST.code, text, 413, transport_status=code.name)
    spec = _details(status)[0] if status is not None else None
    if spec is None:
        spec = BY_CODE.get(code, INTERNAL_ERROR)
    data: list[Any] | None = None
    if status is not None and status.details:
        data = json_format.MessageToDict(status).get("details")
    message = text if text else spec.message
    return PeerRpcError(spec.code, message, HTTP_STATUS.get(code, 500), data,
                        transport_status=code.name)
