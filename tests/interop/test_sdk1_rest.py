"""Our node delegating to the official `a2a-sdk` 1.x server when it serves HTTP+JSON only
(the SDK's own REST routes, `sdk1_driver.py server-rest`): its card lists that one
interface, at a path that is not ours, so the client takes the binding and the URL from the
card. A delegation completes (sent, streamed, got, canceled), the SDK's google.rpc.Status
refusals read as the same errors as over JSON-RPC, and the CLI says which binding it used.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from synthorg.delegation.client import PeerRpcError
from synthorg.delegation.delegator import SETTLED, Delegator
from synthorg.delegation.following import follow_stream
from synthorg.generated.models import TextPart
from synthorg.store.delegations import Delegation
from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import Database, open_database
from synthorg.store.sqlite.delegations import SqliteDelegationStore
from tests.interop.test_sdk1 import DRIVER, SDK1_PYTHON
from tests.support.node import cli

pytestmark = pytest.mark.skipif(
    not SDK1_PYTHON.exists(),
    reason="the a2a-sdk 1.x venv is missing: run `make sdk1-venv` (make test builds it)",
)

NODE, NODE_KEY = "node-a", "sdk1-rest-link-secret-8a2c"
TEXT = [TextPart(kind="text", text="hello over HTTP+JSON")]
REST = "HTTP+JSON"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    process = subprocess.Popen(
        [str(SDK1_PYTHON), str(DRIVER), "server-rest", NODE, NODE_KEY],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


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


def test_the_card_picks_http_json_and_a_delegation_completes(
    db: Database, tmp_path: Path, server: str,
) -> None:
    ours = delegator(db, tmp_path, server)
    client = asyncio.run(ours.peer_client("sdk1"))
    assert client.binding == REST and client.rpc_url == server + "/a2a/rest"
    done = asyncio.run(ours.delegate("sdk1", TEXT, agent_id="echo"))
    assert done.state == "completed" and done.binding == REST
    assert done.task.artifacts and done.task.artifacts[0].parts[0] == TEXT[0]
    assert asyncio.run(ours.refresh(done.id)).state == "completed"


def test_a_parked_task_is_followed_and_canceled(
    db: Database, tmp_path: Path, server: str,
) -> None:
    ours = delegator(db, tmp_path, server)
    record = asyncio.run(ours.delegate("sdk1", TEXT, agent_id="parker"))
    assert record.state == "input-required"
    assert asyncio.run(ours.refresh(record.id)).state == "input-required"
    assert asyncio.run(ours.cancel(record.id)).state == "canceled"


def test_a_delegation_streams(db: Database, tmp_path: Path, server: str) -> None:
    ours = delegator(db, tmp_path, server)
    assert asyncio.run(ours.streams("sdk1"))

    async def streamed() -> Delegation:
        record, events, last = await ours.delegate_streaming("sdk1", TEXT, agent_id="echo")
        assert record.binding == REST

        async def nothing(_: Delegation) -> None:
            return None

        return await follow_stream(ours, record, SETTLED, nothing, events=events, last=last)

    done = asyncio.run(streamed())
    assert done.state == "completed"
    assert done.task.artifacts and done.task.artifacts[0].parts[0] == TEXT[0]


def test_its_refusals_read_as_the_errors_they_stand_for(
    db: Database, tmp_path: Path, server: str,
) -> None:
    ours = delegator(db, tmp_path, server)
    client = asyncio.run(ours.peer_client("sdk1"))
    with pytest.raises(PeerRpcError) as missing:
        asyncio.run(client.get_task("no-such-task"))
    assert missing.value.code == -32001 and missing.value.http_status == 404
    answered = asyncio.run(ours.delegate("sdk1", TEXT, agent_id="chatty"))
    assert answered.state == "completed"
    wrong = delegator(db, tmp_path, server, key="wrong")
    with pytest.raises(PeerRpcError) as refused:
        asyncio.run(wrong.delegate("sdk1", TEXT))
    assert refused.value.http_status == 401 and refused.value.code == -32003


def test_the_cli_delegates_and_shows_the_binding(tmp_path: Path, server: str) -> None:
    (tmp_path / "config.yaml").write_text(f"a2a:\n  enabled: true\n  node_name: {NODE}\n")
    cli(tmp_path, "peers", "add", "sdk1", "--endpoint", server, stdin=NODE_KEY)
    shown = cli(tmp_path, "delegate", "sdk1", "hi", "--agent", "echo")
    assert "delegated to sdk1, agent echo over HTTP+JSON" in shown.stdout, shown.stdout
    waited = cli(tmp_path, "delegate", "sdk1", "hi", "--agent", "echo", "--wait", "--json")
    record = json.loads(waited.stdout)
    assert record["state"] == "completed" and record["binding"] == REST
    listed = cli(tmp_path, "tasks", "list", "--outbound").stdout
    row = next(line for line in listed.splitlines() if line.startswith(record["id"]))
    assert REST in row.split()
