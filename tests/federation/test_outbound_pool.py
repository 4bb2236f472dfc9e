"""A node's calls to a peer reuse their connections while it serves: node-b is a real node,
node-a's side is its delegator on a real SQLite data dir, calling node-b through a TCP relay
on 127.0.0.1 that counts the connections it accepts (and forwards every byte as it is).

    node-a  (the delegator)  knows node-b
    node-b                   allows node-a   agents: echo
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from synthorg.delegation.delegator import Delegator
from synthorg.generated.models import V1TextPart
from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import open_database
from synthorg.store.sqlite.delegations import SqliteDelegationStore
from tests.federation.harness import FedNode, running

TEXT = [V1TextPart(text="hello")]


class Relay:
    """A TCP relay to `port`, counting the connections it accepts."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.accepted = 0

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(ConnectionError, OSError):
            writer.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            yield f"http://127.0.0.1:{port}"
            server.close()


@pytest.fixture(scope="module")
def node_b(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FedNode, str]]:
    root: Path = tmp_path_factory.mktemp("outbound-pool")
    b = FedNode(root, "node-b", ["node-a"], {"echo": "echo"})
    with running(b):
        secret = secrets.token_urlsafe(24)
        b.add_peer("node-a", "http://127.0.0.1:9", secret)
        yield b, secret


async def _calls(data_dir: Path, node_b: tuple[FedNode, str], pooled: bool) -> int:
    """Delegate to node-b and read the task three times: the connections node-b accepted."""
    b, secret = node_b
    relay = Relay(b.port)
    db = open_database(data_dir)
    catalog = SqliteCatalog(db, SecretBox.for_data_dir(data_dir))
    delegator = Delegator(catalog, SqliteDelegationStore(db), "node-a", lambda: 10.0)
    try:
        async with relay.serving() as url:
            catalog.put("node-b", url, "api_key", secret)
            await delegator.streams("node-b")  # the card is read first, on a connection of its own
            read_card = relay.accepted
            if pooled:
                delegator.pool.open()
            record = await delegator.delegate("node-b", TEXT, agent_id="echo")
            for _ in range(3):
                record = await delegator.refresh(record.id)
            assert record.state == "TASK_STATE_COMPLETED"
            await delegator.pool.aclose()  # before the relay stops: it waits for its clients
            return relay.accepted - read_card
    finally:
        db.close()


def test_calls_to_a_peer_reuse_one_connection_while_the_pool_is_open(
    node_b: tuple[FedNode, str], tmp_path: Path,
) -> None:
    assert asyncio.run(_calls(tmp_path / "pooled", node_b, pooled=True)) == 1
    # Closed (the CLI, a node not serving): a connection for each call, as before.
    assert asyncio.run(_calls(tmp_path / "unpooled", node_b, pooled=False)) == 4
