"""Reading a peer's Server-Sent Events: `tasks/resubscribe` (and `message/stream`) outbound.

Each event's `data` is one JSON-RPC response (HTTP+JSON: the StreamResponse itself, or the
google.rpc.Status a refusal ends the stream with; the call is `message:stream` or
`tasks/{id}:subscribe`; gRPC: no SSE, each StreamResponse message of `SendStreamingMessage`
or `SubscribeToTask`, `grpc_binding.stream`); its `id` is the event's sequence number in the
peer's durable per-task log, which a resubscription names in `Last-Event-ID` to resume
exactly after it. Reads are bounded: one event (its data lines together), and any line, at
most `max_bytes`; a stream that stays silent longer than `idle_seconds` (a live peer sends a
keep-alive comment every 15 s) is dropped, and the follower resubscribes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, NamedTuple, cast, get_args

import httpx
from pydantic import TypeAdapter, ValidationError

from synthorg import jsonrpc
from synthorg.delegation import grpc_binding
from synthorg.delegation.client import A2AClient, result_label
from synthorg.delegation.errors import PIN_MISMATCH, PeerError, PeerProtocolError, PeerUnavailable
from synthorg.delegation.rest_binding import RestCall, rest_call
from synthorg.dialects import lenient, objects
from synthorg.dialects.outbound import GRPC, HTTP_JSON
from synthorg.generated.constants import (
    LAST_EVENT_ID_HEADER,
    MEDIA_TYPE_APPLICATION_JSON,
    MEDIA_TYPE_TEXT_EVENT_STREAM,
)
from synthorg.generated.models import (
    StreamEvent,
    V1SendStreamingMessageParams,
    V1StreamResponse,
    V1SubscribeToTaskParams,
)
from synthorg.observability.outbound import outbound_call, trace_headers
from synthorg.tls.outbound import PinMismatch

EVENT_STREAM = MEDIA_TYPE_TEXT_EVENT_STREAM
STREAM_IDLE_SECONDS = 60.0  # four keep-alive periods of silence: the stream is dead
# (sequence number, event) per event, as 1.0's StreamResponse whatever the peer's dialect
Events = AsyncGenerator[tuple[int | None, V1StreamResponse], None]
_EVENT: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)
_V1_EVENTS = lenient.choices(*get_args(V1StreamResponse))  # the payloads of its oneof


class SseEvent(NamedTuple):
    id: str | None
    data: str


class StreamTooLarge(PeerProtocolError):
    """An event or a line went past the bound."""


async def sse_events(chunks: AsyncIterator[bytes], max_bytes: int) -> AsyncIterator[SseEvent]:
    """The events of an SSE byte stream (comments and unknown fields skipped)."""
    buffer = b""
    data: list[bytes] = []
    size = 0
    event_id: str | None = None
    async for chunk in chunks:
        buffer += chunk
        while (end := buffer.find(b"\n")) >= 0:
            line, buffer = buffer[:end].rstrip(b"\r"), buffer[end + 1:]
            if not line:  # a blank line ends the event
                if data:
                    yield SseEvent(event_id, b"\n".join(data).decode("utf-8", "replace"))
                data, size = [], 0
                continue
            if line.startswith(b":"):
                continue  # a comment: keep-alive
            name, _, value = line.partition(b":")
            value = value.removeprefix(b" ")
            if name == b"data":
                size += len(value) + 1
                if size > max_bytes:
                    raise StreamTooLarge(f"an event larger than {max_bytes} bytes")
                data.append(value)
            elif name == b"id":
                event_id = value.decode("utf-8", "replace")
        if len(buffer) > max_bytes:
            raise StreamTooLarge(f"a line longer than {max_bytes} bytes")


def stream_event(peer: str, result: Any, *, speaks_v1: bool = False) -> V1StreamResponse:
    """One event's result as the 1.0 StreamResponse: a 1.0 peer's read as 1.0 (exactly one
    of its payloads; members 1.0 does not define dropped), a 0.3 peer's validated as the 0.3
    event and converted. PeerProtocolError for what is not a valid event."""
    payload = None
    if speaks_v1 and isinstance(result, dict) and len(result) == 1:
        payload = lenient.one_of(_V1_EVENTS, result)
    if speaks_v1 and payload is None:
        raise PeerProtocolError(f"{peer}: a stream event that is not a StreamResponse")
    try:
        if payload is None:
            return objects.stream_response_v1(_EVENT.validate_python(result))
        return cast(V1StreamResponse, lenient.validate(payload, result))
    except ValidationError as exc:
        raise PeerProtocolError(
            f"{peer}: a stream event that is not valid ({exc.error_count()} problems)"
        ) from None


def _rest_event(client: A2AClient, data: Any) -> Any:
    """An HTTP+JSON event: the StreamResponse itself, or the google.rpc.Status a refusal
    ends the stream with (raised as the PeerRpcError it stands for)."""
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        code = data["error"].get("code")
        status = code if isinstance(code, int) and 400 <= code <= 599 else 500
        client.rest_result(status, data)
    return data


def _sequence(event_id: str | None) -> int | None:
    if event_id is None or not event_id.isdigit() or len(event_id) > 19:
        return None
    return int(event_id)


async def stream_call(
    client: A2AClient,
    params: V1SendStreamingMessageParams | V1SubscribeToTaskParams,
    last_event_id: int | None = None,
) -> Events:
    """One streaming JSON-RPC call: (sequence number, event) per event, until the peer
    ends the stream. PeerRpcError for a refusal (a plain JSON-RPC error, or an error event),
    PeerProtocolError for an event that is not a valid one, PeerUnavailable when the peer
    cannot be reached or the connection drops."""
    name = client.record.name
    spoken = client.spoken(params)  # the same call in 0.3 for a 0.3 peer
    method = jsonrpc.method_of(spoken)
    if client.binding == GRPC:
        # A gRPC stream has no event ids: a resubscription starts from the task as it is.
        with outbound_call(name, method) as outcome:
            try:
                grpc_events = grpc_binding.stream(client.grpc_call(), client.grpc_params(spoken))
                async with contextlib.aclosing(grpc_events) as results:
                    async for result in results:
                        yield None, stream_event(name, result, speaks_v1=True)
            except PeerError as exc:
                outcome.result = result_label(exc)
                raise
        return
    request = (rest_call(client.rpc_url, spoken) if client.binding == HTTP_JSON
               else RestCall("POST", client.rpc_url, jsonrpc.call(spoken, 1)))
    headers = {**client.headers, "Accept": EVENT_STREAM}
    if request.body is not None:
        headers["Content-Type"] = MEDIA_TYPE_APPLICATION_JSON
    if last_event_id is not None:
        headers[LAST_EVENT_ID_HEADER] = str(last_event_id)
    # One outbound call (counted, timed, a span when traces are on) for the stream's life.
    with outbound_call(name, method) as outcome:
        try:
            async with contextlib.aclosing(_events(client, method, request, headers)) as events:
                async for item in events:
                    yield item
        except PeerError as exc:
            outcome.result = result_label(exc)
            raise


async def _events(
    client: A2AClient, method: str, request: RestCall, headers: dict[str, str],
) -> Events:
    name = client.record.name
    rest = client.binding == HTTP_JSON
    limit = client.max_response_bytes
    seconds = client.timeout_seconds()
    timeout = httpx.Timeout(seconds, read=max(seconds, STREAM_IDLE_SECONDS))
    try:
        async with (
            httpx.AsyncClient(transport=client.transport, timeout=timeout,
                              verify=client.verify) as http,
            http.stream(request.http_method, request.url, content=request.body,
                        headers=trace_headers(headers),
                        extensions=client.extensions) as response,
        ):
            if not response.headers.get("content-type", "").startswith(EVENT_STREAM):
                raw = b""
                async for chunk in response.aiter_bytes():
                    raw += chunk
                    if len(raw) > limit:
                        raise PeerProtocolError(f"{name}: response larger than {limit} bytes")
                try:
                    payload = json.loads(raw) if raw else None
                except ValueError:
                    payload = None
                if response.status_code in (429, 502, 503, 504):
                    raise PeerUnavailable(f"{name}: HTTP {response.status_code}")
                if rest:
                    client.rest_result(response.status_code, payload)
                else:
                    client.result_of(response.status_code, payload, 1)
                raise PeerProtocolError(f"{name}: {method} did not answer a stream")
            async for event in sse_events(response.aiter_bytes(), limit):
                try:
                    envelope = json.loads(event.data)
                except ValueError:
                    raise PeerProtocolError(f"{name}: an event that is not JSON") from None
                result = _rest_event(client, envelope) if rest else client.result_of(
                    200, envelope, 1)
                yield _sequence(event.id), stream_event(name, result, speaks_v1=client.speaks_v1)
    except PinMismatch:
        raise PeerUnavailable(f"{name}: {PIN_MISMATCH}") from None
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise PeerUnavailable(f"{name}: cannot connect ({type(exc).__name__})") from None
    except httpx.HTTPError as exc:  # the connection dropped, or the stream went silent
        raise PeerUnavailable(f"{name}: the stream broke ({type(exc).__name__})") from None

