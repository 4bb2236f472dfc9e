"""The gRPC listener of one node process: started and stopped with the HTTP app's lifespan,
so it serves in the same event loop as the HTTP server, over the same gateway config."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import grpc

from synthorg.gateway.endpoint import GatewayConfig
from synthorg.grpc.service import A2AServicer
from synthorg.observability.access import Observer
from synthorg.observability.events import a2a as events
from synthorg.observability.log import emit
from synthorg.tls.context import TlsFiles

STOP_GRACE_SECONDS = 2.0


def address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class GrpcListener:
    def __init__(self, config: GatewayConfig, host: str, port: int, tls: TlsFiles | None,
                 scope: Mapping[str, Any], shared_port: bool = False,
                 max_metadata_bytes: int = 32 * 1024, observers: tuple[Observer, ...] = ()
                 ) -> None:
        self._servicer = A2AServicer(config, scope, observers)
        self._max_metadata = max_metadata_bytes
        self._config, self._host, self._port = config, host, port
        self._tls, self._shared_port = tls, shared_port
        self._server: grpc.aio.Server | None = None

    def _options(self) -> list[tuple[str, Any]]:
        limit = self._config.max_request_body_bytes
        return [
            # A message over the JSON-RPC body's ceiling is refused before it is read.
            ("grpc.max_receive_message_length", limit),
            # The call's metadata is its headers: the HTTP server's bound on them, as a hard
            # limit (grpc refuses between its soft and hard limits only at random).
            ("grpc.max_metadata_size", self._max_metadata),
            ("grpc.absolute_max_metadata_size", self._max_metadata),
            # Several workers share the port on purpose; a lone process must not share it
            # with another node by accident.
            ("grpc.so_reuseport", 1 if self._shared_port else 0),
        ]

    async def start(self) -> None:
        server = grpc.aio.server(options=self._options())
        server.add_generic_rpc_handlers((self._servicer.handler(),))
        where = address(self._host, self._port)
        try:
            if self._tls is not None:
                credentials = grpc.ssl_server_credentials(
                    [(self._tls.key.read_bytes(), self._tls.cert.read_bytes())]
                )
                bound = server.add_secure_port(where, credentials)
            else:
                bound = server.add_insecure_port(where)
        except (RuntimeError, OSError):  # grpcio raises RuntimeError for a port in use
            bound = 0
        if not bound:
            # The process stops (its lifespan fails): never serve HTTP without the binding
            # the cards announce.
            print(f"error: cannot listen for gRPC on {where} (server.grpc_port): in use, or "
                  "not an address of this machine", file=sys.stderr, flush=True)
            raise OSError(f"cannot listen for gRPC on {where}")
        await server.start()
        self._server = server
        emit(events.GRPC_LISTENING, host=self._host, port=bound, tls=self._tls is not None)

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(STOP_GRACE_SECONDS)
            self._server = None

    def started(self, first: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
        """A lifespan start: `first` (the node's background work), then this listener."""
        async def start() -> None:
            await first()
            await self.start()

        return start

    def stopped(self, last: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
        """A lifespan stop: this listener (its calls end), then `last`."""
        async def stop() -> None:
            await self.stop()
            await last()

        return stop
