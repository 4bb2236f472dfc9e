"""A2A 1.0 over gRPC: the `A2AService` of the vendored `a2a.proto`, answered by the same 1.0
handlers as the JSON-RPC endpoint (`gateway/dispatch.py`'s DISPATCH_V1, whose method names
are the service's RPC names), behind the same gates.

Each call, in the order of the JSON-RPC pipeline (`gateway/endpoint.py`):

| step | check                                                  | status               |
|------|--------------------------------------------------------|----------------------|
|      | the message is within a2a.max_request_body_bytes       | RESOURCE_EXHAUSTED   |
| 3-5  | the gates, on the call's metadata (`gates.py`)         | UNAUTHENTICATED,     |
|      |                                                        | PERMISSION_DENIED    |
|      | an `a2a-version` present names 1.0                    | FAILED_PRECONDITION  |
|      | the peer's rate limit (`ratelimit.py`)                 | RESOURCE_EXHAUSTED   |
| 8    | the request message parses                             | INVALID_ARGUMENT     |
| 11   | its ProtoJSON document is the method's params          | INVALID_ARGUMENT     |
|      | (`pipeline.validated`, the JSON-RPC endpoint's check)  |                      |
| 12   | the operation's handler; its errors (`status.py`)      | NOT_FOUND, ...       |

The request arrives as bytes and is parsed only once the caller is admitted, so an
unauthenticated caller never reaches the protobuf parser. The conversion is the protobuf
JSON mapping both ways: the request message as the camelCase document the 1.0 params models
take (json_format), the result model's document back into the response message (built
directly by `messages`, as json_format would).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import grpc
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import DecodeError, Message
from pydantic import BaseModel

from synthorg.errors import SynthorgError
from synthorg.gateway import dialect, pipeline
from synthorg.gateway.context import CallContext
from synthorg.gateway.dispatch import Route
from synthorg.gateway.endpoint import A2A_VERSION, GatewayConfig
from synthorg.gateway.gates import Admitted, Refused
from synthorg.gateway.ratelimit import retry_after
from synthorg.gateway.replies import RPC_ERRORS, rpc_error
from synthorg.generated.constants import (
    A2A_VERSION_1_0,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    RATE_LIMITED,
    VERSION_NOT_SUPPORTED,
)
from synthorg.generated.grpc import a2a_pb2
from synthorg.grpc import messages
from synthorg.grpc.status import abort
from synthorg.http.headers import header_map
from synthorg.observability.access import (
    Observer,
    RequestRecord,
    call_started,
    finished,
)
from synthorg.observability.events import a2a as events
from synthorg.observability.log import emit

SERVICE = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"]
PATH = "/grpc"  # the endpoint as the event lines name it (no HTTP path)
OPERATION = "grpc"  # the metrics' and access events' operation of a gRPC call
Context = grpc.aio.ServicerContext[bytes, bytes]


def _identity(data: bytes) -> bytes:
    return data


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()


def _message_class(method: MethodDescriptor, output: bool) -> type[Message]:
    descriptor = method.output_type if output else method.input_type
    return message_factory.GetMessageClass(descriptor)


def result_message(result: BaseModel | list[Any] | None, cls: type[Message]) -> Message:
    """A result model (or None: google.protobuf.Empty) as the RPC's response message."""
    if result is None:
        return cls()
    assert isinstance(result, BaseModel)  # no 1.0 method answers a bare list
    document = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return messages.build(document, cls)  # json_format.ParseDict's message, built directly


class A2AServicer:
    """The gRPC calls of one node process, over its gateway's config (gates, limiter,
    services): one instance per server."""

    def __init__(self, config: GatewayConfig, scope: Mapping[str, Any],
                 observers: tuple[Observer, ...] = ()) -> None:
        self.config = config
        # What the extended card reads to name the node's JSON-RPC URL: the HTTP listener
        # (a2a.public_url overrides it, as for the HTTP caller).
        self.scope = scope
        # The HTTP requests' observers (metrics, activity, traces): a call is one request.
        self.observers = observers

    def _record(self, name: str, request: bytes, context: Context) -> RequestRecord:
        """The call's access record: operation `grpc`, its RPC as the method, its status
        the gRPC status code once it ends (`finished`)."""
        return call_started(OPERATION, name, A2A_VERSION_1_0, _raw(context), len(request),
                            self.observers)

    def handler(self) -> grpc.GenericRpcHandler:
        handlers: dict[str, grpc.RpcMethodHandler[bytes, Message]] = {}
        for method in SERVICE.methods:
            route = dialect.V1.routes[method.name]
            request_cls = _message_class(method, output=False)
            response_cls = _message_class(method, output=True)
            if method.server_streaming:
                handlers[method.name] = grpc.unary_stream_rpc_method_handler(
                    self._stream(method.name, route, request_cls, response_cls),
                    request_deserializer=_identity, response_serializer=_serialize,
                )
            else:
                handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                    self._unary(method.name, route, request_cls, response_cls),
                    request_deserializer=_identity, response_serializer=_serialize,
                )
        return grpc.method_handlers_generic_handler(SERVICE.full_name, handlers)

    def _unary(
        self, name: str, route: Route, request_cls: type[Message], response_cls: type[Message]
    ) -> Callable[[bytes, Context], Any]:
        async def call(request: bytes, context: Context) -> Message:
            record = self._record(name, request, context)
            try:
                _, _, peer = await self._admit(context, record)
                params = await self._params(name, request, request_cls, peer, context)
                assert route.handler is not None
                try:
                    result = await route.handler(params, self._call(peer))
                    answer = result_message(result, response_cls)
                    record.bytes_out = answer.ByteSize()
                    return answer
                except SynthorgError as error:
                    await _refuse_error(context, error, name, peer)
                except Exception as exc:  # an unexpected fault: no detail leaves the node
                    await _fault(context, exc, name, peer)
                raise AssertionError("unreachable")
            finally:
                _finish(record, context)

        return call

    def _stream(
        self, name: str, route: Route, request_cls: type[Message], response_cls: type[Message]
    ) -> Callable[[bytes, Context], AsyncIterator[Message]]:
        async def call(request: bytes, context: Context) -> AsyncIterator[Message]:
            record = self._record(name, request, context)
            try:
                async for answer in self._events(name, route, request, request_cls,
                                                 response_cls, context, record):
                    record.bytes_out += answer.ByteSize()
                    yield answer
            finally:
                _finish(record, context)

        return call

    async def _events(
        self, name: str, route: Route, request: bytes, request_cls: type[Message],
        response_cls: type[Message], context: Context, record: RequestRecord,
    ) -> AsyncIterator[Message]:
        headers, cert, peer = await self._admit(context, record)
        params = await self._params(name, request, request_cls, peer, context)
        assert route.stream is not None
        events_ = route.stream(params, self._call(peer))
        watch = self.config.admission
        revoked = watch.watch(headers, cert) if watch is not None else None
        try:
            async for item in _until_revoked(events_, revoked):
                if isinstance(item, Refused):
                    emit(events.STREAM_REVOKED, level="warning", peer_name=peer,
                         reason=item.reason, status=item.status)
                    await abort(context, item.error, item.message)
                if not item.quiet:  # a quiet event is a keep-alive: HTTP/2 has its own
                    yield result_message(item.event, response_cls)
        except SynthorgError as error:
            await _refuse_error(context, error, name, peer)
        except (grpc.aio.AbortError, asyncio.CancelledError):
            raise
        except Exception as exc:
            await _fault(context, exc, name, peer)
        finally:
            if watch is not None and revoked is not None:
                watch.release(revoked)
            with contextlib.suppress(Exception):
                await events_.aclose()  # type: ignore[attr-defined]

    async def _admit(
        self, context: Context, record: RequestRecord
    ) -> tuple[dict[str, str], bytes | None, str]:
        """Steps 3-5 and the rate limit: the admitted (headers, certificate, peer)."""
        config = self.config
        headers = header_map(record.headers)
        try:
            await config.request_started()
        except Exception as exc:
            emit(events.INTERNAL_ERROR, level="error", path=PATH, error=type(exc).__name__,
                 reason="store_unavailable")
            await abort(context, INTERNAL_ERROR)
        cert = _peer_certificate(context)
        result = config.gate.check(headers, cert)
        if not isinstance(result, Admitted):
            emit(events.INBOUND_AUTH_FAILED, level="warning", path=PATH, reason=result.reason,
                 status=result.status, peer_name=result.peer,
                 **({"detail": result.detail} if result.detail else {}))
            record.refusal, record.peer = result.reason, result.peer
            await abort(context, result.error, result.message)
        peer = record.peer = result.peer
        for observer in self.observers:
            observer.admitted(record)
            observer.method(record)
        version = headers.get(A2A_VERSION)
        if version is not None and not dialect.speaks_v1(version):  # this binding is 1.0's
            await abort(context, VERSION_NOT_SUPPORTED)
        if config.limiter is not None:
            own = result.rate_limit
            wait = config.limiter.admit(peer, own)
            if wait is None:
                wait = await config.limiter.take(peer, own)
            if wait:
                seconds = retry_after(wait)
                record.refusal = "rate_limited"
                emit(events.INBOUND_REJECTED, level="warning", reason="rate_limited",
                     status=429, path=PATH, peer_name=peer, retry_after=seconds)
                await abort(context, RATE_LIMITED, RATE_LIMITED.message, retry_after=seconds)
        return headers, cert, peer

    async def _params(
        self, name: str, request: bytes, request_cls: type[Message], peer: str, context: Context
    ) -> Any:
        """Steps 8-11: the request message, as the method's params model."""
        emit(events.INBOUND_RECEIVED, method=name, request_id=None, peer_name=peer, path=PATH)
        try:
            message = request_cls.FromString(request)
        except DecodeError:
            emit(events.JSONRPC_PARSE_ERROR, peer_name=peer, reason="not a " + name + " request",
                 request_id=None, path=PATH)
            await abort(context, INVALID_REQUEST, f"Invalid request: not a {name} request")
        raw = json_format.MessageToDict(message)
        too_deep = pipeline.too_deep(raw)
        if too_deep is not None:
            await abort(context, INVALID_REQUEST, too_deep)
        params, issues = pipeline.validated(dialect.V1, name, raw)
        if issues:
            emit(events.BOUNDARY_VALIDATION_FAILED, method=name, request_id=None,
                 peer_name=peer, errors=len(issues), path=PATH)
            await abort(context, INVALID_PARAMS, None, {"errors": issues})
        return params

    def _call(self, peer: str) -> CallContext:
        # No last-event-id: a StreamResponse carries no event id a caller could resume from,
        # so a stream starts from the task as it is.
        services = self.config.services
        return CallContext(peer, None, None, services.tasks, services.skills, services.push,
                           None, services.cards, self.scope)


async def _until_revoked(
    events_: AsyncIterator[Any], revoked: asyncio.Future[Refused] | None
) -> AsyncIterator[Any]:
    """The stream's events, or the gates' refusal once they no longer admit its caller."""
    iterator = aiter(events_)
    while True:
        following = asyncio.ensure_future(anext(iterator))
        waits: set[asyncio.Future[Any]] = {following}
        if revoked is not None:
            waits.add(revoked)
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not following.done():
                following.cancel()
                with contextlib.suppress(BaseException):
                    await following
        if revoked is not None and revoked.done() and not revoked.cancelled():
            yield revoked.result()
            return
        try:
            yield following.result()
        except StopAsyncIteration:
            return


def _raw(context: Context) -> tuple[tuple[bytes, bytes], ...]:
    """The call's text metadata as raw headers (what a trace's caller is read from)."""
    return tuple(
        (key.encode("latin-1"), value.encode("utf-8", "surrogateescape"))
        for key, value in context.invocation_metadata() or ()
        if isinstance(value, str)  # a -bin entry carries no header
    )


def _finish(record: RequestRecord, context: Context) -> None:
    """The call ended: its gRPC status (OK unless one was set or it was aborted)."""
    record.duration = time.perf_counter() - record.started
    code = context.code()
    record.status = code.value[0] if isinstance(code, grpc.StatusCode) else int(code or 0)
    finished(record)


def _peer_certificate(context: Context) -> bytes | None:
    """None: the listener asks for no client certificate (grpcio's server credentials can
    only ask every client for one or none), so gate 3 refuses a peer of scheme mtls here."""
    return None


async def _refuse_error(context: Context, error: SynthorgError, name: str, peer: str) -> None:
    if type(error) not in RPC_ERRORS:
        await _fault(context, error, name, peer)
    spec, message, data = rpc_error(error)
    await abort(context, spec, message, data)


async def _fault(context: Context, exc: BaseException, name: str, peer: str) -> None:
    emit(events.INTERNAL_ERROR, level="error", method=name, request_id=None, peer_name=peer,
         error=type(exc).__name__, path=PATH)
    await abort(context, INTERNAL_ERROR)
