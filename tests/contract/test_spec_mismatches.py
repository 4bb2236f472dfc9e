"""Mismatches between the spec and the server that the contract runs once found, each pinned
by the exact request that showed it, now that both sides agree.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from synthorg.contract.spec import bundled_openapi
from synthorg.node import Node
from tests.contract.support import PEER, SECRET, body_conforms, prepare_data_dir

HEADERS = {"X-A2A-Peer-Name": PEER, "X-API-Key": SECRET, "Content-Type": "application/json"}


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    built = Node.build(prepare_data_dir(tmp_path / "node"))
    yield built
    built.close()


def request(node: Node, method: str, path: str, **kwargs: Any) -> httpx.Response:
    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=node.app())
        async with httpx.AsyncClient(transport=transport, base_url="http://node") as client:
            return await client.request(method, path, **kwargs)

    return asyncio.run(send())


def test_params_method_other_than_the_envelope_method(node: Node) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "skills/query",
            "params": {"method": {}, "skill": "echo"},
        }
    ).encode()
    assert not body_conforms(body)  # the spec rejects it ...
    response = request(node, "POST", "/api/v1/a2a/", content=body, headers=HEADERS)
    assert response.status_code == 200
    assert "error" in response.json(), response.json()  # ... so the answer must be an error


def test_a_long_if_none_match_is_served_as_the_spec_allows(node: Node) -> None:
    declared = bundled_openapi()["components"]["parameters"]["IfNoneMatch"]["schema"]
    assert "maxLength" not in declared  # the spec sets no limit, and the node ignores non-matches
    response = request(
        node, "GET", "/.well-known/agent-card.json", headers={"If-None-Match": "0" * 5000}
    )
    assert response.status_code == 200
