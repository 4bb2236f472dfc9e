"""Delegation loops are stopped with visited-nodes metadata.

Each forwarding node appends its own name to `message.metadata["synthorg.visited"]`. A node
that finds its own name there, or a list already `MAX_HOPS` long, refuses the message, so
A -> B -> A ends in a clear error on the first hop back instead of recursing.
"""

from __future__ import annotations

from synthorg.generated.models import Message, V1Message

VISITED_KEY = "synthorg.visited"
MAX_HOPS = 8


def visited_nodes(message: Message | V1Message) -> list[str]:
    visited = (message.metadata or {}).get(VISITED_KEY, [])
    return [v for v in visited if isinstance(v, str)] if isinstance(visited, list) else []


def loop_refusal(message: Message | V1Message, node_name: str | None) -> str | None:
    """Why the message may not be taken (a loop, or too many hops), or None."""
    visited = visited_nodes(message)
    if node_name and node_name in visited:
        return f"Delegation loop: this task already passed through {' -> '.join(visited)}"
    if len(visited) >= MAX_HOPS:
        return f"Delegation hop limit of {MAX_HOPS} reached"
    return None
