"""Our A2AClient and Delegator delegating to a peer built on the `a2a-sdk` 0.3.x server.

The peer (tests/interop/sdk_peer.py) checks our peer headers in a small ASGI middleware and
answers with the SDK's own serialisation; our client validates every result with our strict
generated models, so any field the SDK sends that our spec does not know shows up here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from synthorg.delegation.delegator import Delegator
from synthorg.delegation.errors import PeerRpcError
from synthorg.generated.models import V1TextPart
from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import Database, open_database
from synthorg.store.sqlite.delegations import SqliteDelegationStore

pytest.importorskip(
    "sse_starlette", reason="the a2a-sdk server needs a2a-sdk[http-server] (sse-starlette)"
)

from tests.interop.sdk_peer import SdkPeer

NODE, KEY = "node-a", "sdk-server-link-secret-71c2"
TEXT = [V1TextPart(text="hello from synthorg")]


@pytest.fixture(scope="module")
def sdk_peer() -> Iterator[SdkPeer]:
    with SdkPeer(NODE, KEY) as peer:
        yield peer


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    conn = open_database(tmp_path)
    try:
        yield conn
    finally:
        conn.close()


def delegator(db: Database, tmp_path: Path, peer: SdkPeer, key: str = KEY) -> Delegator:
    catalog = SqliteCatalog(db, SecretBox.for_data_dir(tmp_path))
    catalog.put("sdk-peer", peer.url, "api_key", key)
    return Delegator(catalog, SqliteDelegationStore(db), NODE, lambda: 10.0)


def test_delegate_to_the_sdk_echo_agent(db: Database, tmp_path: Path, sdk_peer: SdkPeer) -> None:
    ours = delegator(db, tmp_path, sdk_peer)
    record = asyncio.run(ours.delegate("sdk-peer", TEXT, agent_id="echo"))
    assert record.state == "TASK_STATE_COMPLETED"
    texts = [p.text for a in record.task.artifacts or [] for p in a.parts
             if isinstance(p, V1TextPart)]
    assert texts == ["hello from synthorg"]
    refreshed = asyncio.run(ours.refresh(record.id))
    assert refreshed.state == "TASK_STATE_COMPLETED" and refreshed.task.id == record.remote_task_id
    # The middleware saw our peer headers.
    assert sdk_peer.gate.seen[-1]["x-a2a-peer-name"] == NODE
    assert sdk_peer.gate.seen[-1]["x-api-key"] == KEY


def test_follow_and_cancel_a_parked_sdk_task(
    db: Database, tmp_path: Path, sdk_peer: SdkPeer
) -> None:
    ours = delegator(db, tmp_path, sdk_peer)
    record = asyncio.run(ours.delegate("sdk-peer", TEXT, agent_id="parker"))
    assert record.state == "TASK_STATE_INPUT_REQUIRED"
    assert asyncio.run(ours.follow(record.id, 5.0)).state == "TASK_STATE_INPUT_REQUIRED"
    canceled = asyncio.run(ours.cancel(record.id))
    assert canceled.state == "TASK_STATE_CANCELED"
    assert asyncio.run(ours.refresh(record.id)).state == "TASK_STATE_CANCELED"


def test_sdk_errors_surface_with_their_codes(
    db: Database, tmp_path: Path, sdk_peer: SdkPeer
) -> None:
    ours = delegator(db, tmp_path, sdk_peer)
    done = asyncio.run(ours.delegate("sdk-peer", TEXT, agent_id="echo"))
    with pytest.raises(PeerRpcError) as not_cancelable:
        asyncio.run(ours.cancel(done.id))
    assert not_cancelable.value.code == -32002
    with pytest.raises(PeerRpcError) as not_found:
        asyncio.run(ours.client("sdk-peer").get_task("no-such-task"))
    assert not_found.value.code == -32001


def test_a_wrong_key_is_refused_by_the_middleware(
    db: Database, tmp_path: Path, sdk_peer: SdkPeer
) -> None:
    ours = delegator(db, tmp_path, sdk_peer, key="not-the-key")
    with pytest.raises(PeerRpcError) as caught:
        asyncio.run(ours.delegate("sdk-peer", TEXT))
    assert (caught.value.code, caught.value.http_status) == (-32003, 401)
    assert asyncio.run(ours.store.recent()) == []


def test_a_message_answer_to_message_send_stands_for_a_completed_task(
    db: Database, tmp_path: Path, sdk_peer: SdkPeer
) -> None:
    """A2A allows message/send to return a Message instead of a Task; SDK agents often do.
    Our client records it as a task completed with that message."""
    ours = delegator(db, tmp_path, sdk_peer)
    record = asyncio.run(ours.delegate("sdk-peer", TEXT, agent_id="chatty"))
    assert record.state == "TASK_STATE_COMPLETED"
    reply = record.task.status.message
    assert reply is not None and reply.role == "ROLE_AGENT"
    assert reply.parts == [V1TextPart(text="just a message")]
    assert [r.id for r in asyncio.run(ours.store.recent())] == [record.id]
