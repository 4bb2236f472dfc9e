"""Three live nodes for the federation suite, linked as an operator would link them.

    node-a  allows node-b           agents: echo, bounce (-> node-b/bounce)
    node-b  allows node-a, node-c   agents: echo, parker, relay (-> node-c/echo),
                                            relay-park (-> node-c/parker),
                                            bounce (-> node-a/bounce), back (-> node-a/echo)
    node-c  allows node-b           agents: echo, parker

Links (one shared secret each): a <-> b, b <-> c. node-a also holds a record for node-c,
which does not list node-a: the unlisted-peer case.

A module of two nodes takes `nodes` instead: node-a and node-b linked (`harness.linked_pair`),
as the module says: node-b's agents its `B_AGENTS` (default the harness's), node-a calling
node-b in its `BINDING` (default: as node-b's card says), node-b serving gRPC when
`SERVES_GRPC`.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.federation.harness import B_AGENTS, FedNode, Pair, link, linked_pair, running


@dataclass
class Federation:
    a: FedNode
    b: FedNode
    c: FedNode
    ab_secret: str


@pytest.fixture(scope="session")
def fed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Federation]:
    root: Path = tmp_path_factory.mktemp("federation")
    a = FedNode(root, "node-a", ["node-b"], {"echo": "echo", "bounce": "node-b/bounce"})
    b = FedNode(root, "node-b", ["node-a", "node-c"], {
        "echo": "echo",
        "parker": "park",
        "relay": "node-c/echo",
        "relay-park": "node-c/parker",
        "bounce": "node-a/bounce",
        "back": "node-a/echo",
    })
    c = FedNode(root, "node-c", ["node-b"], {"echo": "echo", "parker": "park"})
    with running(a, b, c):
        ab_secret = link(a, b)
        link(b, c)
        a.add_peer(c.name, c.url, secrets.token_urlsafe(24))
        yield Federation(a, b, c, ab_secret)


@pytest.fixture(scope="module")
def nodes(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    module = request.module
    root = tmp_path_factory.mktemp(module.__name__.rsplit(".", 1)[-1])
    with linked_pair(root, getattr(module, "BINDING", None),
                     agents=getattr(module, "B_AGENTS", B_AGENTS),
                     grpc=getattr(module, "SERVES_GRPC", False)) as pair:
        yield pair
