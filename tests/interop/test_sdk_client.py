"""The official `a2a-sdk` 0.3.x client calling our node, with the peer headers.

The SDK's httpx client carries `X-A2A-Peer-Name` and `X-API-Key` as default headers; our node
runs as a real process with the SDK peer on its allowlist and in its catalog. Everything our
node answers must parse with the SDK's own types.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientHTTPError, A2AClientJSONRPCError
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.types import (
    AgentCard,
    DataPart,
    FilePart,
    FileWithBytes,
    FileWithUri,
    Message,
    MessageSendParams,
    Part,
    Role,
    Task,
    TaskIdParams,
    TaskQueryParams,
    TaskState,
    TextPart,
)

from tests.support.node import NodeProcess, cli

PEER, KEY = "sdk-peer", "sdk-peer-link-secret-0b7e4d"
CONFIG = f"""\
a2a:
  enabled: true
  node_name: node-b
  allowed_peers: [{PEER}]
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
  - {{id: parker, name: Parker, executor: {{kind: park}}}}
"""
T = TypeVar("T")


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    data_dir: Path = tmp_path_factory.mktemp("sdk-client")
    with NodeProcess(data_dir, CONFIG) as running:
        cli(data_dir, "peers", "add", PEER, "--endpoint", "http://127.0.0.1:9", stdin=KEY)
        yield running


def run(factory: Callable[[httpx.AsyncClient], Awaitable[T]], key: str = KEY) -> T:
    async def main() -> T:
        headers = {"X-A2A-Peer-Name": PEER, "X-API-Key": key}
        async with httpx.AsyncClient(headers=headers, timeout=10.0) as http:
            return await factory(http)

    return asyncio.run(main())


def text_message(text: str, **extra: Any) -> Message:
    return Message(
        role=Role.user, parts=[Part(root=TextPart(text=text))], message_id=str(uuid.uuid4()),
        **extra,
    )


def artifact_text(task: Task) -> list[str]:
    return [
        part.root.text
        for artifact in task.artifacts or []
        for part in artifact.parts
        if isinstance(part.root, TextPart)
    ]


# -- the SDK's JSON-RPC transport, pointed at our endpoint ------------------------------


def transport(http: httpx.AsyncClient, node: NodeProcess, agent: str | None = None) -> Any:
    url = node.rpc_url if agent is None else f"{node.url}/api/v1/a2a/agents/{agent}/"
    return JsonRpcTransport(http, url=url)


def test_message_send_get_and_cancel_parse_with_sdk_types(node: NodeProcess) -> None:
    async def scenario(http: httpx.AsyncClient) -> tuple[Task, Task, Task, Task]:
        rpc = transport(http, node)
        echoed = await rpc.send_message(MessageSendParams(
            message=text_message("hello sdk", metadata={"agentId": "echo"})
        ))
        got = await rpc.get_task(TaskQueryParams(id=echoed.id, history_length=1))
        parked = await transport(http, node, "parker").send_message(
            MessageSendParams(message=text_message("wait here"))
        )
        canceled = await rpc.cancel_task(TaskIdParams(id=parked.id))
        return echoed, got, parked, canceled

    echoed, got, parked, canceled = run(scenario)
    assert isinstance(echoed, Task) and echoed.status.state == TaskState.completed
    assert artifact_text(echoed) == ["hello sdk"]
    assert got.id == echoed.id and got.status.state == TaskState.completed
    assert got.history is not None and len(got.history) == 1
    assert parked.status.state == TaskState.input_required
    assert canceled.id == parked.id and canceled.status.state == TaskState.canceled


def test_sdk_sees_our_jsonrpc_errors_with_their_codes(node: NodeProcess) -> None:
    async def scenario(http: httpx.AsyncClient) -> list[int]:
        rpc = transport(http, node)
        codes = []
        done = await rpc.send_message(MessageSendParams(message=text_message("final")))
        for call in (
            rpc.get_task(TaskQueryParams(id=str(uuid.uuid4()))),
            rpc.cancel_task(TaskIdParams(id=str(uuid.uuid4()))),
            rpc.cancel_task(TaskIdParams(id=done.id)),
        ):
            try:
                await call
            except A2AClientJSONRPCError as exc:
                codes.append(exc.error.code)
        return codes

    assert run(scenario) == [-32001, -32001, -32002]


def test_sdk_file_and_data_parts_and_metadata_are_within_our_bounds(node: NodeProcess) -> None:
    """What the SDK serialises for file parts (bytes as `base64.b64encode` gives them, which
    the SDK passes through as they are), data parts and metadata passes the spec's input
    bounds, and comes back as it was sent. The SDK adds no metadata of its own."""
    parts = [
        Part(root=TextPart(text="with attachments")),
        Part(root=FilePart(file=FileWithBytes(
            bytes=base64.b64encode(bytes(range(256))).decode(), mime_type="application/x-bin",
            name="all-bytes.bin",
        ))),
        Part(root=FilePart(file=FileWithUri(uri="https://files.example/r.pdf", name="r.pdf"))),
        Part(root=DataPart(data={"rows": [{"n": 1, "ok": True}], "note": None}, metadata={"v": 2})),
    ]
    metadata = {"agentId": "echo", "trace": {"id": "t-1", "hops": [1, 2]}, "score": 0.5}

    async def scenario(http: httpx.AsyncClient) -> Task:
        message = Message(role=Role.user, parts=parts, message_id=str(uuid.uuid4()),
                          metadata=metadata)
        result = await transport(http, node).send_message(MessageSendParams(message=message))
        assert isinstance(result, Task)
        return result

    task = run(scenario)
    assert task.status.state == TaskState.completed
    assert task.history is not None
    assert task.history[0].parts == parts
    assert task.history[0].metadata == metadata


def test_sdk_sees_a_refused_file_uri_as_invalid_params(node: NodeProcess) -> None:
    async def scenario(http: httpx.AsyncClient) -> Any:
        part = Part(root=FilePart(file=FileWithUri(uri="javascript:alert(1)")))
        message = Message(role=Role.user, parts=[part], message_id=str(uuid.uuid4()))
        return await transport(http, node).send_message(MessageSendParams(message=message))

    with pytest.raises(A2AClientJSONRPCError) as caught:
        run(scenario)
    assert caught.value.error.code == -32602
    assert "javascript" not in str(caught.value.error.model_dump())


def test_sdk_with_a_wrong_key_gets_http_401(node: NodeProcess) -> None:
    async def scenario(http: httpx.AsyncClient) -> None:
        await transport(http, node).get_task(TaskQueryParams(id=str(uuid.uuid4())))

    with pytest.raises(A2AClientHTTPError) as caught:
        run(scenario, key="not-the-key")
    assert caught.value.status_code == 401


# -- the SDK's high-level client, built from our published cards ------------------------


def sdk_client(http: httpx.AsyncClient, card: AgentCard) -> Any:
    """The SDK's client for `card` (its close() would close `http`, which `run` owns)."""
    return ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)


async def first_task(client: Any, text: str) -> Task:
    async for event in client.send_message(text_message(text)):
        assert isinstance(event, tuple), f"expected (Task, update), got {event!r}"
        task: Task = event[0]
        return task
    raise AssertionError("no answer")


def test_sdk_client_from_our_cards_sends_gets_and_cancels(node: NodeProcess) -> None:
    async def scenario(http: httpx.AsyncClient) -> tuple[Task, Task, Task]:
        company = await A2ACardResolver(http, node.url).get_agent_card()
        parker = await A2ACardResolver(http, node.url).get_agent_card(
            relative_card_path="/.well-known/agents/parker/agent-card.json"
        )
        echoed = await first_task(sdk_client(http, company), "via the company card")
        client = sdk_client(http, parker)
        parked = await first_task(client, "via the agent card")
        got = await client.get_task(TaskQueryParams(id=parked.id))
        canceled = await client.cancel_task(TaskIdParams(id=parked.id))
        assert got.status.state == TaskState.input_required
        return echoed, parked, canceled

    echoed, parked, canceled = run(scenario)
    assert echoed.status.state == TaskState.completed
    assert artifact_text(echoed) == ["via the company card"]
    assert parked.status.state == TaskState.input_required
    assert canceled.status.state == TaskState.canceled


# -- streaming: the SDK's SSE client reads our events ----------------------------------------


def test_sdk_streams_a_message_and_resubscribes(node: NodeProcess) -> None:
    from a2a.types import TaskStatusUpdateEvent

    async def scenario(http: httpx.AsyncClient) -> tuple[list[Any], list[Any]]:
        rpc = transport(http, node)
        streamed = [
            event async for event in rpc.send_message_streaming(MessageSendParams(
                message=text_message("stream me", metadata={"agentId": "echo"})
            ))
        ]
        resubscribed = [
            event async for event in rpc.resubscribe(TaskIdParams(id=streamed[0].id))
        ]
        return streamed, resubscribed

    streamed, resubscribed = run(scenario)
    assert isinstance(streamed[0], Task)
    assert isinstance(streamed[-1], TaskStatusUpdateEvent) and streamed[-1].final
    assert streamed[-1].status.state == TaskState.completed
    assert len(resubscribed) == 1 and isinstance(resubscribed[0], Task)
    assert resubscribed[0].status.state == TaskState.completed
