"""The gRPC twin of `proxy.py`: forwards every call of the A2A 1.0 service to a node, adding a
peer's metadata (`x-a2a-peer-name`, `x-api-key`), so a conformance kit's gRPC client, which
knows nothing of SynthOrg's gates, calls the node as an admitted peer.

    python -m conformance.grpc_proxy --listen 127.0.0.1:8101 --target 127.0.0.2:8101 \\
        --peer tck --key-file secret.txt

Messages pass as bytes, unparsed; a refusal passes back with its status, message and trailing
metadata (the google.rpc details), a stream event by event.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc

from synthorg.generated.grpc import a2a_pb2

SERVICE = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"]
STREAMING = frozenset(
    f"/{SERVICE.full_name}/{method.name}" for method in SERVICE.methods
    if method.server_streaming
)
Context = grpc.aio.ServicerContext[bytes, bytes]


def _identity(data: bytes) -> bytes:
    return data


class Forward(grpc.GenericRpcHandler):
    def __init__(self, channel: grpc.aio.Channel, metadata: tuple[tuple[str, str], ...]) -> None:
        self._channel, self._metadata = channel, metadata

    def _outgoing(self, context: Context) -> tuple[tuple[str, Any], ...]:
        incoming = tuple((k, v) for k, v in context.invocation_metadata() or ()
                         if not k.startswith((":", "grpc-")))
        return incoming + self._metadata

    def service(
        self, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler[bytes, bytes] | None:
        method = handler_call_details.method
        if method in STREAMING:
            return grpc.unary_stream_rpc_method_handler(
                self._stream(method), request_deserializer=_identity,
                response_serializer=_identity)
        return grpc.unary_unary_rpc_method_handler(
            self._unary(method), request_deserializer=_identity, response_serializer=_identity)

    def _unary(self, method: str) -> Any:
        call = self._channel.unary_unary(method, request_serializer=_identity,
                                         response_deserializer=_identity)

        async def forward(request: bytes, context: Context) -> bytes:
            try:
                return bytes(await call(request, metadata=self._outgoing(context)))
            except grpc.aio.AioRpcError as error:
                await context.abort(error.code(), error.details() or "",
                                    tuple(error.trailing_metadata() or ()))
                raise

        return forward

    def _stream(self, method: str) -> Any:
        call = self._channel.unary_stream(method, request_serializer=_identity,
                                          response_deserializer=_identity)

        async def forward(request: bytes, context: Context) -> AsyncIterator[bytes]:
            stream = call(request, metadata=self._outgoing(context))
            try:
                async for item in stream:
                    yield bytes(item)
            except grpc.aio.AioRpcError as error:
                await context.abort(error.code(), error.details() or "",
                                    tuple(error.trailing_metadata() or ()))

        return forward


async def serve(listen: str, target: str, peer: str, key: str) -> None:
    async with grpc.aio.insecure_channel(target) as channel:
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((Forward(channel, (("x-a2a-peer-name", peer),
                                                           ("x-api-key", key))),))
        if not server.add_insecure_port(listen):
            raise OSError(f"cannot listen on {listen}")
        await server.start()
        await server.wait_for_termination()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m conformance.grpc_proxy")
    parser.add_argument("--listen", required=True, help="host:port")
    parser.add_argument("--target", required=True, help="the node's gRPC host:port")
    parser.add_argument("--peer", required=True)
    parser.add_argument("--key-file", type=Path, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.listen, args.target, args.peer,
                      args.key_file.read_text().strip()))


if __name__ == "__main__":
    main()
