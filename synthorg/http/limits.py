"""The per-connection limits of the HTTP server, from config.yaml's `server:` key."""

from __future__ import annotations

from dataclasses import dataclass

from synthorg.generated.models import ServerConfig


@dataclass(frozen=True, slots=True)
class ServerLimits:
    max_header_bytes: int  # request line and header fields together
    max_header_count: int
    header_timeout: float  # seconds: connection open / previous response end -> headers end
    body_timeout: float  # seconds: headers end -> body end
    keepalive_timeout: float  # seconds an idle kept-alive connection stays open
    max_connections: int  # open client connections per process

    @classmethod
    def from_config(cls, config: ServerConfig) -> ServerLimits:
        return cls(
            max_header_bytes=config.max_header_bytes,
            max_header_count=config.max_header_count,
            header_timeout=config.header_timeout_seconds,
            body_timeout=config.body_timeout_seconds,
            keepalive_timeout=config.keepalive_timeout_seconds,
            max_connections=config.max_connections,
        )


DEFAULT_LIMITS = ServerLimits.from_config(ServerConfig())
