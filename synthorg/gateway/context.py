"""What a handler knows about a call besides its params."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from synthorg.gateway.errors import RequestId


@dataclass(frozen=True, slots=True)
class RpcContext:
    peer: str
    request_id: RequestId
    node: Any  # synthorg.node.Node; Any keeps handlers free of an import cycle
    agent_id: str | None = None  # set when the call came in on an agent's own endpoint
