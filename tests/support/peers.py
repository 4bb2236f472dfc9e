"""A fixed, editable set of peers standing in for the connection catalog in discovery tests."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Peer:
    name: str
    endpoint: str
    card_key: str | None = None


class Catalog:
    def __init__(self, *peers: Peer) -> None:
        self.peers = {p.name: p for p in peers}

    def get(self, name: str, /) -> Peer | None:
        return self.peers.get(name)

    def list(self) -> list[Peer]:
        return [self.peers[name] for name in sorted(self.peers)]
