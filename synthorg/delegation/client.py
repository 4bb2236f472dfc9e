"""The outbound A2A client: this node calling one catalog peer over JSON-RPC, or A2A 1.0's
HTTP+JSON binding (`rest_binding.py`: the same calls as routes, the same limits, retries and
TLS rules; refusals read back as the same PeerRpcError), or its gRPC binding
(`grpc_binding.py`: the same calls as RPCs, with the same headers as metadata).

Every call carries `X-A2A-Peer-Name` (this node's name as the peer knows it) and the link
secret under the record's scheme. Transient failures (connect errors, 429 with Retry-After,
502/503/504) are retried with bounded exponential backoff and full jitter; that is safe for
`message/send` because its `messageId` is fixed before the first attempt and the peer treats
`(peer, messageId)` as an idempotency key. A peer's JSON-RPC error surfaces with its code and
message whatever the HTTP status. Each call is built as the spec's 1.0 params model
(synthorg/generated/models.py; a 0.3 peer's mapped by synthorg/dialects/outbound_v03.py) and
serialised once; answers are read into the 1.0 objects (V1Task, V1StreamResponse) as the
spec's model of the peer's dialect validates them, leniently: members the model does not
define are dropped at any depth (`dialects/lenient.py`), so a peer on a later revision is
still understood. A 1.0 peer's answer is read as it is, all 1.0 defines kept; a 0.3 peer's
is validated as 0.3 and converted (`dialects/objects.py`).
"""

from __future__ import annotations

import asyncio
import json
import random
import ssl
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
import httpx
from pydantic import ValidationError

from synthorg import jsonrpc
from synthorg.clock import utc_now
from synthorg.delegation import grpc_binding, rest_binding
from synthorg.delegation.errors import (
    PIN_MISMATCH,
    PeerError,
    PeerProtocolError,
    PeerRpcError,
    PeerUnavailable,
    RequestInvalid,
)
from synthorg.delegation.grpc_peers import refuse_grpc
from synthorg.delegation.pool import ClientPool, ConnectionKey
from synthorg.dialects import lenient, objects
from synthorg.dialects.outbound import GRPC, HTTP_JSON, JSONRPC, PeerDialect
from synthorg.dialects.outbound_v03 import (
    V03_METHOD_NAMES,
    OutboundParams,
    V03OutboundParams,
    params_v03,
)
from synthorg.generated.constants import (
    A2A_VERSION_1_0,
    A2A_VERSION_HEADER,
    API_KEY_HEADER,
    GATEWAY_RPC,
    KIND_MESSAGE,
    MEDIA_TYPE_APPLICATION_JSON,
    PEER_NAME_HEADER,
    PEER_SCHEME_API_KEY,
    PEER_SCHEME_MTLS,
    TASK_STATE_COMPLETED,
    V1_CANCEL_TASK,
    V1_GET_TASK,
    V1_ROLE_USER,
    V1_SEND_MESSAGE,
    V1_SEND_STREAMING_MESSAGE,
)
from synthorg.generated.models import (
    Message,
    SpecModel,
    Task,
    V1CancelTaskParams,
    V1CreateTaskPushNotificationConfigParams,
    V1GetTaskParams,
    V1Message,
    V1MessagePayload,
    V1Part,
    V1SendMessageConfiguration,
    V1SendMessageParams,
    V1SendStreamingMessageParams,
    V1StreamResponse,
    V1Task,
    V1TaskPayload,
    V1TaskStatus,
)
from synthorg.http.numbers import ascii_int
from synthorg.observability.outbound import outbound_call, trace_headers
from synthorg.store.catalog import PeerRecord
from synthorg.tls.context import public_trust
from synthorg.tls.outbound import PinMismatch, request_extensions

RequestId = str | int | None
P = TypeVar("P", bound=SpecModel)
RPC_PATH = GATEWAY_RPC.path
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
RETRY_STATUSES = frozenset({429, 502, 503, 504})
VERSION_HEADER = A2A_VERSION_HEADER
_ANSWERED = uuid.UUID("0b6f2d8e-4c1a-4e3b-9f57-a2d4c6e8b013")  # ids of tasks a Message stands for
MAX_RETRY_AFTER = 30.0


# The result label of an outbound call that failed (synthorg.observability.outbound).
_RESULTS: dict[type[PeerError], str] = {
    PeerRpcError: "rpc_error", PeerUnavailable: "unavailable", PeerProtocolError: "protocol_error",
}


def result_label(exc: PeerError) -> str:
    """The result label of an outbound call that failed with `exc`."""
    return _RESULTS.get(type(exc), "error")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    base_delay: float = 0.2
    max_delay: float = 5.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER)
        return random.uniform(0, min(self.max_delay, self.base_delay * 2**attempt))


def credential_headers(record: PeerRecord, local_name: str) -> dict[str, str]:
    headers = {PEER_NAME_HEADER: local_name}
    if record.scheme == PEER_SCHEME_MTLS:
        return headers  # the client certificate is the credential; the pin is never sent
    if record.scheme == PEER_SCHEME_API_KEY:
        headers[API_KEY_HEADER] = record.secret
    else:
        headers["Authorization"] = f"Bearer {record.secret}"
    return headers


def _retry_after(response: httpx.Response) -> float | None:
    """Retry-After in delta-seconds (ASCII digits, as RFC 9110 writes them; `float()` would
    take "nan", "inf" and other scripts' digits); None for anything else, a date included."""
    seconds = ascii_int(response.headers.get("retry-after", "").strip(" \t"))
    return None if seconds is None else float(seconds)


def default_rpc_url(endpoint: str) -> str:
    """A peer's 0.3 JSON-RPC endpoint: the catalog endpoint's /api/v1/a2a/."""
    return endpoint.rstrip("/") + RPC_PATH


def build_message(
    parts: Sequence[V1Part],
    *,
    agent_id: str | None = None,
    task_id: str | None = None,
    context_id: str | None = None,
    message_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> V1Message:
    """The user message of a SendMessage (or SendStreamingMessage)."""
    meta = dict(metadata or {})
    if agent_id:
        meta["agentId"] = agent_id
    try:
        return V1Message.model_validate({
            "messageId": message_id or str(uuid.uuid4()),  # fixed across retries
            "role": V1_ROLE_USER,
            "parts": list(parts),
            **({"taskId": task_id} if task_id else {}),
            **({"contextId": context_id} if context_id else {}),
            **({"metadata": meta} if meta else {}),
        })
    except ValidationError as exc:
        raise RequestInvalid(
            f"the message is not valid ({exc.error_count()} problems)"
        ) from None


def call_params(model: type[P], **fields: Any) -> P:
    """A call's params as the generated model (fields that are None left out: the spec's
    models refuse an explicit null); RequestInvalid for a value the spec does not allow."""
    try:
        return model.model_validate({k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        raise RequestInvalid(
            f"{model.__name__} is not valid ({exc.error_count()} problems)"
        ) from None


def send_params(message: V1Message, *, blocking: bool = True) -> V1SendMessageParams:
    """SendMessage's params; blocking=False asks the peer to answer as soon as its agent
    has started."""
    configuration = None if blocking else V1SendMessageConfiguration(returnImmediately=True)
    return call_params(V1SendMessageParams, method=V1_SEND_MESSAGE, message=message,
                       configuration=configuration)


def stream_params(message: V1Message) -> V1SendStreamingMessageParams:
    """SendStreamingMessage's params."""
    return call_params(V1SendStreamingMessageParams, method=V1_SEND_STREAMING_MESSAGE,
                       message=message)


class A2AClient:
    def __init__(
        self,
        record: PeerRecord,
        local_name: str,
        timeout: Callable[[], float],
        *,
        retry: RetryPolicy = RetryPolicy(),
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        dialect: PeerDialect | None = None,
        tls: ssl.SSLContext | None = None,
        grpc_tls: grpc.ChannelCredentials | None = None,
        pool: ClientPool | None = None,
    ) -> None:
        self.record = record
        # None: A2A 0.3 at the catalog endpoint, where the calls (built in 1.0) are made with
        # the 0.3 methods and objects (synthorg/dialects/outbound_v03.py), and answers read
        # back as 1.0 tasks.
        self.dialect = dialect
        self._headers = credential_headers(record, local_name)
        if dialect is not None and dialect.version == A2A_VERSION_1_0:
            self._headers[VERSION_HEADER] = A2A_VERSION_1_0
        self._timeout = timeout
        self._retry = retry
        self._max_bytes = max_response_bytes
        self._transport = transport
        # server.tls: the node's client certificate, and the peers' CA trusted too
        self.verify: ssl.SSLContext = tls if tls is not None else public_trust()
        self._grpc_tls = grpc_tls  # the same, for a gRPC channel; None: gRPC's default roots
        # mtls: the peer's server certificate must have the record's pin
        self.extensions = request_extensions(record.scheme, record.secret)
        self._sleep = sleep
        # the node's pooled clients (`pool.py`); none: a client of its own for each call
        self._pool = pool if pool is not None else ClientPool()

    @property
    def connection_key(self) -> ConnectionKey:
        """What this client's connections depend on: a pooled one is kept under it."""
        pin = self.record.secret if self.record.scheme == PEER_SCHEME_MTLS else None
        return ConnectionKey(self.record.endpoint, self.record.scheme, pin, self.verify,
                             self._transport)

    # What a streaming call (synthorg.delegation.sse_client) shares with this client.
    @property
    def headers(self) -> dict[str, str]:
        return dict(self._headers)

    @property
    def max_response_bytes(self) -> int:
        return self._max_bytes

    @property
    def transport(self) -> httpx.AsyncBaseTransport | None:
        return self._transport

    def timeout_seconds(self) -> float:
        return self._timeout()

    def result_of(self, status: int, payload: Any, request_id: RequestId) -> Any:
        """The `result` of a JSON-RPC response, or its error raised (see `call`)."""
        return self._result(status, payload, request_id)

    @property
    def rpc_url(self) -> str:
        if self.dialect is not None:
            return self.dialect.url
        return default_rpc_url(self.record.endpoint)

    def grpc_call(self) -> grpc_binding.GrpcCall:
        """What a gRPC call to the peer is made with (the dialect's target, this client's
        headers, timeout, bound, TLS and retries); PeerMisconfigured for a peer never called
        over gRPC (`grpc_peers`)."""
        assert self.dialect is not None and self.dialect.binding == GRPC
        refuse_grpc(self.record.name, self.record.scheme)
        return grpc_binding.GrpcCall(
            self.record.name, self.dialect.url, self.headers, self._timeout(), self._max_bytes,
            self._grpc_tls, self._retry, self._sleep,
        )

    def grpc_params(self, params: OutboundParams | V03OutboundParams) -> OutboundParams:
        """A call in the gRPC binding: its 1.0 params (the dialect is 1.0's)."""
        if isinstance(params, V03OutboundParams):
            raise RequestInvalid(f"{self.record.name}: a gRPC call is made in 1.0 only")
        return params

    @property
    def binding(self) -> str:
        """The binding calls are made in: JSONRPC, or HTTP+JSON or GRPC (in 1.0)."""
        return self.dialect.binding if self.dialect is not None else JSONRPC

    @property
    def speaks_v1(self) -> bool:
        return self.dialect is not None and self.dialect.version == A2A_VERSION_1_0

    async def send_message(
        self,
        parts: Sequence[V1Part],
        *,
        agent_id: str | None = None,
        task_id: str | None = None,
        context_id: str | None = None,
        message_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        blocking: bool = True,
    ) -> V1Task:
        """blocking=False asks the peer to answer as soon as its agent has started."""
        message = build_message(parts, agent_id=agent_id, task_id=task_id,
                                context_id=context_id, message_id=message_id, metadata=metadata)
        return self.task_of(await self.call(send_params(message, blocking=blocking)))

    def spoken(self, params: OutboundParams) -> OutboundParams | V03OutboundParams:
        """A call as the peer's dialect makes it: 0.3's method and params for a 0.3 peer
        (RequestInvalid, and nothing sent, for a call 0.3 cannot carry)."""
        if self.speaks_v1:
            return params
        try:
            return params_v03(params)
        except ValidationError as exc:
            raise RequestInvalid(
                f"{self.record.name}: the call is not valid in 0.3 ({exc.error_count()} "
                "problems)"
            ) from None

    def task_of(self, result: Any) -> V1Task:
        """A peer's answer to SendMessage as a task: a Task, or a Message standing for a
        completed one; from a 1.0 peer, {task} or {message}."""
        method = self.wire_method(V1_SEND_MESSAGE)
        if self.speaks_v1:
            if isinstance(result, dict) and set(result) == {"task"}:
                return self._as_task(V1_SEND_MESSAGE, result["task"])
            if not isinstance(result, dict) or set(result) != {"message"}:
                raise PeerProtocolError(
                    f"{self.record.name}: {method} answered neither a task nor a message"
                )
        elif not isinstance(result, dict) or result.get("kind") != KIND_MESSAGE:
            return self._as_task(V1_SEND_MESSAGE, result)
        try:
            if self.speaks_v1:
                reply = lenient.validate(V1Message, result["message"])
            else:
                reply = objects.message_to_v1(Message.model_validate(result))
        except ValidationError as exc:
            raise PeerProtocolError(
                f"{self.record.name}: {method} result is not a valid Message "
                f"({exc.error_count()} problems)"
            ) from None
        # A peer may answer with a Message (an agent that keeps no task, as agents built on
        # the official SDK may): it stands for a task completed with it.
        return message_task(self.record.name, reply)

    def task_of_event(self, event: V1StreamResponse) -> V1Task:
        """The first event of SendStreamingMessage as a task (a Message stands for one
        completed with it, as in `task_of`)."""
        if isinstance(event, V1TaskPayload):
            return event.task
        if isinstance(event, V1MessagePayload):
            return message_task(self.record.name, event.message)
        raise PeerProtocolError(
            f"{self.record.name}: {self.wire_method(V1_SEND_STREAMING_MESSAGE)} began with "
            "neither a task nor a message"
        )

    async def get_task(self, task_id: str, history_length: int | None = None) -> V1Task:
        params = call_params(V1GetTaskParams, method=V1_GET_TASK, id=task_id,
                             historyLength=history_length)
        return self._as_task(V1_GET_TASK, await self.call(params))

    async def cancel_task(self, task_id: str) -> V1Task:
        params = call_params(V1CancelTaskParams, method=V1_CANCEL_TASK, id=task_id)
        return self._as_task(V1_CANCEL_TASK, await self.call(params))

    async def set_push_config(self, params: V1CreateTaskPushNotificationConfigParams) -> None:
        """Ask the peer to push its task to the config `params` name, in the peer's dialect
        (0.3 names the method tasks/pushNotificationConfig/set and nests the config)."""
        await self.call(params)

    def wire_method(self, method: str) -> str:
        """The name the peer knows the 1.0 method `method` by in its dialect."""
        return method if self.speaks_v1 else V03_METHOD_NAMES.get(method, method)

    def _as_task(self, method: str, result: Any) -> V1Task:
        """A Task answer as the 1.0 task: a 1.0 peer's read as 1.0 (members 1.0 does not
        define dropped), a 0.3 peer's validated as 0.3 and converted."""
        try:
            if self.speaks_v1:
                return lenient.validate(V1Task, result)
            return objects.task_v1(Task.model_validate(result))
        except ValidationError as exc:
            raise PeerProtocolError(
                f"{self.record.name}: {self.wire_method(method)} result is not a valid Task "
                f"({exc.error_count()} problems)"
            ) from None
        except (ValueError, KeyError, TypeError, AttributeError):
            raise PeerProtocolError(
                f"{self.record.name}: {self.wire_method(method)} result is not a valid Task"
            ) from None

    async def call(self, params: OutboundParams) -> Any:
        """One call with retries, in the peer's binding and dialect; returns the `result`
        member (HTTP+JSON: the answer's body). The params are serialised once, before the
        first attempt."""
        spoken = self.spoken(params)
        with outbound_call(self.record.name, jsonrpc.method_of(spoken)) as outcome:
            try:
                return await self._call(spoken)
            except PeerError as exc:
                outcome.result = result_label(exc)
                raise

    async def _call(self, params: OutboundParams | V03OutboundParams) -> Any:
        if self.binding == GRPC:
            return await grpc_binding.unary(self.grpc_call(), self.grpc_params(params))
        request_id = str(uuid.uuid4())
        rest = self.binding == HTTP_JSON
        if rest:
            http_method, url, body = rest_binding.rest_call(self.rpc_url, params)
        else:
            http_method, url, body = "POST", self.rpc_url, jsonrpc.call(params, request_id)
        name = self.record.name
        problem = "no attempt made"
        for attempt in range(self._retry.attempts):
            retry_after: float | None = None
            try:
                status, payload, retry_after = await self._post(body, http_method, url)
            except PinMismatch:
                raise PeerUnavailable(f"{name}: {PIN_MISMATCH}") from None
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                problem = f"cannot connect ({type(exc).__name__})"
            except httpx.TimeoutException:
                raise PeerUnavailable(f"{name}: no answer within {self._timeout():g}s") from None
            except httpx.HTTPError as exc:
                raise PeerUnavailable(f"{name}: {type(exc).__name__}") from None
            else:
                if status not in RETRY_STATUSES:
                    if rest:
                        return self.rest_result(status, payload)
                    return self._result(status, payload, request_id)
                problem = f"HTTP {status}"
            if attempt + 1 < self._retry.attempts:
                await self._sleep(self._retry.delay(attempt, retry_after))
        raise PeerUnavailable(f"{name}: gave up after {self._retry.attempts} attempts ({problem})")

    async def _post(
        self, body: bytes | None, http_method: str = "POST", url: str | None = None,
    ) -> tuple[int, Any, float | None]:
        """One request (a POST by default, to the JSON-RPC endpoint) with a capped, streamed
        read: (status, parsed JSON or None, Retry-After)."""
        typed = {} if body is None else {"Content-Type": MEDIA_TYPE_APPLICATION_JSON}
        headers = trace_headers({**self._headers, **typed})
        timeout = httpx.Timeout(self._timeout())
        async with (
            self._pool.client(self.record.name, self.connection_key) as http,
            http.stream(http_method, url or self.rpc_url, content=body, headers=headers,
                        extensions=self.extensions, timeout=timeout) as response,
        ):
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > self._max_bytes:
                    raise PeerProtocolError(
                        f"{self.record.name}: response larger than {self._max_bytes} bytes"
                    )
                chunks.append(chunk)
        raw = b"".join(chunks)
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = None
        return response.status_code, payload, _retry_after(response)

    def rest_result(self, status: int, payload: Any) -> Any:
        """An HTTP+JSON answer's result (the body itself), or its google.rpc.Status raised as
        the PeerRpcError the same refusal is over JSON-RPC."""
        if 200 <= status < 300:
            if payload is None:
                raise PeerProtocolError(f"{self.record.name}: HTTP 200 without a JSON body")
            return payload
        found = rest_binding.status_error(status, payload)
        if found is None:
            raise PeerProtocolError(f"{self.record.name}: HTTP {status} without an error body")
        error, message = found
        details = payload["error"].get("details")
        raise PeerRpcError(error.code, message, status, details)

    def _result(self, status: int, payload: Any, request_id: RequestId) -> Any:
        name = self.record.name
        if not isinstance(payload, dict):
            raise PeerProtocolError(f"{name}: HTTP {status} with no JSON-RPC envelope")
        error = payload.get("error")
        if isinstance(error, dict):
            code, message = error.get("code"), error.get("message")
            if isinstance(code, int) and isinstance(message, str):
                raise PeerRpcError(code, message, status, error.get("data"))
            raise PeerProtocolError(f"{name}: malformed JSON-RPC error (HTTP {status})")
        if payload.get("id") != request_id:
            raise PeerProtocolError(f"{name}: response id does not match the request id")
        if status != 200 or "result" not in payload:
            raise PeerProtocolError(f"{name}: HTTP {status} without a result")
        return payload["result"]


def message_task(peer: str, reply: V1Message) -> V1Task:
    """The task a peer's Message answer stands for: completed with it, its ids the message's
    own or, without them, stable ones derived from the peer and the message."""
    stable = uuid.uuid5(_ANSWERED, f"{peer}\n{reply.messageId}")
    task_id = reply.taskId or str(stable)
    context_id = reply.contextId or task_id
    reply = reply.model_copy(update={"taskId": task_id, "contextId": context_id})
    return V1Task(
        id=task_id, contextId=context_id,
        status=V1TaskStatus(state=TASK_STATE_COMPLETED, message=reply, timestamp=utc_now()),
        history=[reply], artifacts=[],
    )
