"""Our node delegating to the official `a2a-sdk` 1.x server when it serves one binding other
than JSON-RPC: HTTP+JSON only (the SDK's own REST routes, `sdk1_driver.py server-rest`), or
gRPC only (the SDK's own GrpcHandler, `server-grpc`). Its card lists that one interface, at a
path (or a gRPC port) that is not ours, so the client takes the binding and the URL from the
card. A delegation completes (sent, streamed, got, canceled), the SDK's google.rpc.Status
refusals read as the same errors as over JSON-RPC, and the CLI says which binding it used.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from synthorg.delegation.delegator import SETTLED, Delegator
from synthorg.delegation.errors import PeerRpcError
from synthorg.delegation.following import follow_stream
from synthorg.generated.models import V1TextPart
from synthorg.store.delegations import Delegation
from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import Database, open_database
from synthorg.store.sqlite.delegations import SqliteDelegationStore
from tests.support.node import cli
from tests.support.sdk1 import Sdk1Server, needs_sdk1, sdk1_server

pytestmark = needs_sdk1

NODE, NODE_KEY = "node-a", "sdk1-rest-link-secret-8a2c"
TEXT = [V1TextPart(text="hello in one binding")]
REST, GRPC = "HTTP+JSON", "GRPC"


@pytest.fixture(scope="module", params=[REST, GRPC])
def peer(request: pytest.FixtureRequest) -> Iterator[Sdk1Server]:
    with sdk1_server(NODE, NODE_KEY, request.param) as served:
        yield served


def where(peer: Sdk1Server) -> str:
    """Where its card says it serves its binding, as the client calls it."""
    if peer.binding == GRPC:
        return f"grpc://127.0.0.1:{peer.grpc_port}"
    return peer.url + "/a2a/rest"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    conn = open_database(tmp_path)
    try:
        yield conn
    finally:
        conn.close()


def delegator(db: Database, tmp_path: Path, url: str, key: str = NODE_KEY) -> Delegator:
    catalog = SqliteCatalog(db, SecretBox.for_data_dir(tmp_path))
    catalog.put("sdk1", url, "api_key", key)
    return Delegator(catalog, SqliteDelegationStore(db), NODE, lambda: 10.0)


def test_the_card_picks_its_binding_and_a_delegation_completes(
    db: Database, tmp_path: Path, peer: Sdk1Server,
) -> None:
    ours = delegator(db, tmp_path, peer.url)
    client = asyncio.run(ours.peer_client("sdk1"))
    assert client.binding == peer.binding and client.rpc_url == where(peer)
    done = asyncio.run(ours.delegate("sdk1", TEXT, agent_id="echo"))
    assert done.state == "TASK_STATE_COMPLETED" and done.binding == peer.binding
    assert done.task.artifacts and done.task.artifacts[0].parts[0] == TEXT[0]
    assert asyncio.run(ours.refresh(done.id)).state == "TASK_STATE_COMPLETED"


def test_a_parked_task_is_followed_and_canceled(
    db: Database, tmp_path: Path, peer: Sdk1Server,
) -> None:
    ours = delegator(db, tmp_path, peer.url)
    record = asyncio.run(ours.delegate("sdk1", TEXT, agent_id="parker"))
    assert record.state == "TASK_STATE_INPUT_REQUIRED"
    assert asyncio.run(ours.refresh(record.id)).state == "TASK_STATE_INPUT_REQUIRED"
    assert asyncio.run(ours.cancel(record.id)).state == "TASK_STATE_CANCELED"


def test_a_delegation_streams(db: Database, tmp_path: Path, peer: Sdk1Server) -> None:
    ours = delegator(db, tmp_path, peer.url)
    assert asyncio.run(ours.streams("sdk1"))

    async def streamed() -> Delegation:
        record, events, last = await ours.delegate_streaming("sdk1", TEXT, agent_id="echo")
        assert record.binding == peer.binding

        async def nothing(_: Delegation) -> None:
            return None

        return await follow_stream(ours, record, SETTLED, nothing, events=events, last=last)

    done = asyncio.run(streamed())
    assert done.state == "TASK_STATE_COMPLETED"
    assert done.task.artifacts and done.task.artifacts[0].parts[0] == TEXT[0]


def test_its_refusals_read_as_the_errors_they_stand_for(
    db: Database, tmp_path: Path, peer: Sdk1Server,
) -> None:
    ours = delegator(db, tmp_path, peer.url)
    client = asyncio.run(ours.peer_client("sdk1"))
    with pytest.raises(PeerRpcError) as missing:
        asyncio.run(client.get_task("no-such-task"))
    assert missing.value.code == -32001 and missing.value.http_status == 404
    answered = asyncio.run(ours.delegate("sdk1", TEXT, agent_id="chatty"))
    assert answered.state == "TASK_STATE_COMPLETED"
    wrong = delegator(db, tmp_path, peer.url, key="wrong")
    with pytest.raises(PeerRpcError) as refused:
        asyncio.run(wrong.delegate("sdk1", TEXT))
    assert refused.value.http_status == 401 and refused.value.code == -32003


def test_the_cli_delegates_and_shows_the_binding(tmp_path: Path, peer: Sdk1Server) -> None:
    (tmp_path / "config.yaml").write_text(f"a2a:\n  enabled: true\n  node_name: {NODE}\n")
    cli(tmp_path, "peers", "add", "sdk1", "--endpoint", peer.url, stdin=NODE_KEY)
    shown = cli(tmp_path, "delegate", "sdk1", "hi", "--agent", "echo")
    assert f"delegated to sdk1, agent echo over {peer.binding}" in shown.stdout, shown.stdout
    waited = cli(tmp_path, "delegate", "sdk1", "hi", "--agent", "echo", "--wait", "--json")
    record = json.loads(waited.stdout)
    assert record["state"] == "completed" and record["binding"] == peer.binding
    listed = cli(tmp_path, "tasks", "list", "--outbound").stdout
    row = next(line for line in listed.splitlines() if line.startswith(record["id"]))
    assert peer.binding in row.split()
