"""A2A 1.0 over gRPC (`server.grpc_port`) against a live node, with a real grpc.aio client:
every operation of the A2AService, the gates and their statuses, a task of another peer that
reads as missing, the size bound, and both server streams."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc
import httpx
import pytest
from google.protobuf import struct_pb2
from google.rpc import error_details_pb2, status_pb2

from examples.make_test_ca import issue, make_ca, write_node
from synthorg.generated.grpc import a2a_pb2 as pb
from synthorg.generated.grpc.a2a_pb2_grpc import A2AServiceStub
from tests.integration.helpers import unique
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer
from tests.support.node import cli

T = TypeVar("T")
PEER_A, KEY_A = "grpc-a", "key-grpc-a-5d1e9c3b7f2a"
PEER_B, KEY_B = "grpc-b", "key-grpc-b-8a2c4e6f0b1d"
PEER_UNLISTED, KEY_UNLISTED = "grpc-unlisted", "key-grpc-unlisted-3c5e7a9b1d"
PEER_SLOW, KEY_SLOW = "grpc-slow", "key-grpc-slow-6b8d0f2a4c6e"  # one call per 100 s
PEER_GONE, KEY_GONE = "grpc-gone", "key-grpc-gone-1a3c5e7b9d0f"  # removed while it streams
LIMIT = 16 * 1024
ADMIN_TOKEN = "admin-token-for-grpc-tests-7c1e3a5b9d2f"
StatusCode = grpc.StatusCode


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir: Path = tmp_path_factory.mktemp("grpc")
    config = f"""\
a2a:
  enabled: true
  allowed_peers: [{PEER_A}, {PEER_B}, {PEER_SLOW}, {PEER_GONE}]
  max_request_body_bytes: {LIMIT}
  peer_rate_limit_burst: 1
  push_allow_private_networks: true
server:
  grpc_port: {_free_port()}
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
  - {{id: parker, name: Parker, executor: {{kind: park}}}}
  - id: slow
    name: Slow writer
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {{seconds: 60, chunks: 60}}
"""
    for peer, key in ((PEER_A, KEY_A), (PEER_B, KEY_B), (PEER_UNLISTED, KEY_UNLISTED),
                      (PEER_GONE, KEY_GONE)):
        add_peer(data_dir, peer, key)
    cli(data_dir, "peers", "add", PEER_SLOW, "--endpoint", "http://127.0.0.1:9",
        "--rate-limit", "0.01/s", stdin=KEY_SLOW)
    with LiveNode(data_dir, config, env={"SYNTHORG_ADMIN_TOKEN": ADMIN_TOKEN}) as live:
        live.wait_for_event("a2a.grpc.listening")
        yield live


def _target(node: LiveNode) -> str:
    return f"127.0.0.1:{node.wait_for_event('a2a.grpc.listening')['port']}"


def _metadata(peer: str | None, key: str | None) -> list[tuple[str, str]]:
    pairs = []
    if peer is not None:
        pairs.append(("x-a2a-peer-name", peer))
    if key is not None:
        pairs.append(("x-api-key", key))
    return pairs


def run(node: LiveNode, body: Callable[[A2AServiceStub], Awaitable[T]]) -> T:
    """`body` with a stub on a fresh grpc.aio channel to the node."""

    async def main() -> T:
        async with grpc.aio.insecure_channel(_target(node)) as channel:
            return await body(A2AServiceStub(channel))

    return asyncio.run(main())


A = _metadata(PEER_A, KEY_A)
B = _metadata(PEER_B, KEY_B)


def user_message(text: str, agent: str = "echo", task_id: str = "") -> pb.Message:
    metadata = struct_pb2.Struct()
    metadata.update({"agentId": agent})
    return pb.Message(message_id=unique(), role=pb.ROLE_USER, parts=[pb.Part(text=text)],
                      metadata=metadata, task_id=task_id)


def send(stub: A2AServiceStub, text: str, agent: str = "echo",
         metadata: list[tuple[str, str]] = A) -> Awaitable[pb.SendMessageResponse]:
    request = pb.SendMessageRequest(message=user_message(text, agent))
    return stub.SendMessage(request, metadata=metadata)  # type: ignore[no-any-return]


def details(error: grpc.aio.AioRpcError) -> list[Any]:
    """The google.rpc.Status details of a refusal, unpacked."""
    raw = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    assert isinstance(raw, bytes), "no rich status"
    status = status_pb2.Status.FromString(raw)
    assert status.code == error.code().value[0]
    unpacked = []
    for any_ in status.details:
        for cls in (error_details_pb2.ErrorInfo, error_details_pb2.BadRequest,
                    error_details_pb2.RetryInfo):
            if any_.Is(cls.DESCRIPTOR):
                message = cls()
                any_.Unpack(message)
                unpacked.append(message)
    return unpacked


def refusal(node: LiveNode, body: Callable[[A2AServiceStub], Awaitable[Any]]
            ) -> grpc.aio.AioRpcError:
    async def expect(stub: A2AServiceStub) -> grpc.aio.AioRpcError:
        try:
            await body(stub)
        except grpc.aio.AioRpcError as error:
            return error
        raise AssertionError("the call was answered, not refused")

    return run(node, expect)


# -- the operations ------------------------------------------------------------------------


def test_send_message_answers_a_completed_task(node: LiveNode) -> None:
    answer = run(node, lambda stub: send(stub, "hello over grpc"))
    assert answer.WhichOneof("payload") == "task"
    task = answer.task
    assert task.status.state == pb.TASK_STATE_COMPLETED
    assert task.history[0].role == pb.ROLE_USER
    assert task.history[0].parts[0].text == "hello over grpc"


def test_get_list_and_cancel_read_the_same_task_as_json_rpc(node: LiveNode) -> None:
    async def body(stub: A2AServiceStub) -> None:
        parked = (await send(stub, "park me", agent="parker")).task
        assert parked.status.state == pb.TASK_STATE_INPUT_REQUIRED
        got = await stub.GetTask(pb.GetTaskRequest(id=parked.id, history_length=0), metadata=A)
        assert got.id == parked.id and not got.history
        listed = await stub.ListTasks(pb.ListTasksRequest(context_id=parked.context_id),
                                      metadata=A)
        assert [t.id for t in listed.tasks] == [parked.id]
        canceled = await stub.CancelTask(pb.CancelTaskRequest(id=parked.id), metadata=A)
        assert canceled.status.state == pb.TASK_STATE_CANCELED

    run(node, body)
    with node.client(PEER_A, KEY_A) as http:
        answer = http.post("/api/v1/a2a/", headers={"A2A-Version": "1.0"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "ListTasks",
            "params": {"status": "TASK_STATE_CANCELED"}}).json()
    assert answer["result"]["tasks"], answer


def test_push_config_operations(node: LiveNode) -> None:
    async def body(stub: A2AServiceStub) -> None:
        task = (await send(stub, "park for push", agent="parker")).task
        created = await stub.CreateTaskPushNotificationConfig(pb.TaskPushNotificationConfig(
            task_id=task.id, url="https://127.0.0.1:9/hook", token="tok-123"), metadata=A)
        assert created.task_id == task.id and created.id
        got = await stub.GetTaskPushNotificationConfig(
            pb.GetTaskPushNotificationConfigRequest(task_id=task.id, id=created.id), metadata=A)
        assert got.url == "https://127.0.0.1:9/hook"
        listed = await stub.ListTaskPushNotificationConfigs(
            pb.ListTaskPushNotificationConfigsRequest(task_id=task.id), metadata=A)
        assert [c.id for c in listed.configs] == [created.id]
        await stub.DeleteTaskPushNotificationConfig(
            pb.DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=created.id),
            metadata=A)
        listed = await stub.ListTaskPushNotificationConfigs(
            pb.ListTaskPushNotificationConfigsRequest(task_id=task.id), metadata=A)
        assert not listed.configs

    run(node, body)


def test_extended_card_lists_the_grpc_interface(node: LiveNode) -> None:
    card = run(node, lambda stub: stub.GetExtendedAgentCard(pb.GetExtendedAgentCardRequest(),
                                                            metadata=A))
    bindings = {i.protocol_binding: i.url for i in card.supported_interfaces}
    assert bindings["JSONRPC"].startswith(f"http://127.0.0.1:{node.port}/")
    assert bindings["GRPC"] == _target(node)



def test_the_public_card_lists_the_grpc_interface_beside_json_rpc(node: LiveNode) -> None:
    with node.client() as http:
        card = http.get("/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}).json()
    interfaces = card["supportedInterfaces"]
    assert {"url": _target(node), "protocolBinding": "GRPC", "protocolVersion": "1.0"} in (
        interfaces)
    assert interfaces[0]["protocolBinding"] == "JSONRPC"  # still the preferred one


# -- streams -------------------------------------------------------------------------------


def state_of(event: pb.StreamResponse) -> int:
    if event.HasField("status_update"):
        return int(event.status_update.status.state)
    return int(event.task.status.state)


async def _collect(stream: Any) -> list[pb.StreamResponse]:
    """The rest of a server stream, read as `read()` reads it."""
    items = []
    while (item := await stream.read()) is not grpc.aio.EOF:
        items.append(item)
    return items


def test_send_streaming_message_streams_to_the_final_state(node: LiveNode) -> None:
    async def body(stub: A2AServiceStub) -> list[pb.StreamResponse]:
        request = pb.SendMessageRequest(message=user_message("stream me"))
        return await _collect(stub.SendStreamingMessage(request, metadata=A))

    events = run(node, body)
    assert events[0].WhichOneof("payload") == "task"
    assert state_of(events[-1]) == pb.TASK_STATE_COMPLETED


def test_subscribe_follows_a_working_task_until_it_ends(node: LiveNode) -> None:
    async def body(stub: A2AServiceStub) -> list[pb.StreamResponse]:
        started = stub.SendStreamingMessage(
            pb.SendMessageRequest(message=user_message("long", agent="slow")), metadata=A)
        task = (await started.read()).task
        started.cancel()  # the task goes on without this stream
        stream = stub.SubscribeToTask(pb.SubscribeToTaskRequest(id=task.id), metadata=A)
        first = await stream.read()
        assert first.task.id == task.id
        assert first.task.status.state == pb.TASK_STATE_WORKING
        await stub.CancelTask(pb.CancelTaskRequest(id=task.id), metadata=A)
        return [first, *await _collect(stream)]

    events = run(node, body)
    assert state_of(events[-1]) == pb.TASK_STATE_CANCELED


def test_a_parked_task_is_answered_as_it_is_and_the_stream_ends(node: LiveNode) -> None:
    async def body(stub: A2AServiceStub) -> list[pb.StreamResponse]:
        task = (await send(stub, "park to follow", agent="parker")).task
        stream = stub.SubscribeToTask(pb.SubscribeToTaskRequest(id=task.id), metadata=A)
        return await _collect(stream)

    [event] = run(node, body)
    assert state_of(event) == pb.TASK_STATE_INPUT_REQUIRED


def test_a_stream_ends_unauthenticated_when_its_peer_is_removed(node: LiveNode) -> None:
    gone = _metadata(PEER_GONE, KEY_GONE)

    async def body(stub: A2AServiceStub) -> grpc.StatusCode:
        stream = stub.SendStreamingMessage(
            pb.SendMessageRequest(message=user_message("long", agent="slow")), metadata=gone)
        first = await stream.read()
        assert first.task.status.state in (pb.TASK_STATE_SUBMITTED, pb.TASK_STATE_WORKING)
        cli(node.data_dir, "peers", "remove", PEER_GONE)
        try:
            await _collect(stream)  # ends: this returns
        except grpc.aio.AioRpcError as error:
            return error.code()
        raise AssertionError("the stream ended without a refusal")

    assert run(node, body) == StatusCode.UNAUTHENTICATED
    event = node.wait_for_event("a2a.stream.revoked", peer_name=PEER_GONE)
    assert event["reason"] == "no_credential_record"


def test_subscribe_to_a_final_task_is_failed_precondition(node: LiveNode) -> None:
    async def body(stub: A2AServiceStub) -> Any:
        task = (await send(stub, "done already")).task
        return await _collect(stub.SubscribeToTask(pb.SubscribeToTaskRequest(id=task.id),
                                                    metadata=A))

    error = refusal(node, body)
    assert error.code() == StatusCode.FAILED_PRECONDITION
    info = details(error)[0]
    assert (info.reason, info.domain) == ("UNSUPPORTED_OPERATION", "a2a-protocol.org")


# -- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(("metadata", "code"), [
    ([], StatusCode.UNAUTHENTICATED),
    (_metadata(PEER_A, None), StatusCode.UNAUTHENTICATED),
    (_metadata(PEER_A, KEY_B), StatusCode.UNAUTHENTICATED),
    (_metadata(PEER_A, KEY_A + "x"), StatusCode.UNAUTHENTICATED),
    (_metadata(PEER_UNLISTED, KEY_UNLISTED), StatusCode.PERMISSION_DENIED),
    ([("authorization", f"Bearer {KEY_A}"), ("x-a2a-peer-name", "Not A Name!")],
     StatusCode.UNAUTHENTICATED),
])
def test_the_gates_refuse_with_grpc_statuses(
    node: LiveNode, metadata: list[tuple[str, str]], code: grpc.StatusCode
) -> None:
    error = refusal(node, lambda stub: send(stub, "let me in", metadata=metadata))
    assert error.code() == code
    info = details(error)[0]
    assert isinstance(info, error_details_pb2.ErrorInfo) and info.reason
    assert KEY_A not in (error.details() or "")


def test_a2a_version_other_than_1_0_is_version_not_supported(node: LiveNode) -> None:
    answer = run(node, lambda stub: send(stub, "1.0.1", metadata=[*A, ("a2a-version", "1.0")]))
    assert answer.task.status.state == pb.TASK_STATE_COMPLETED
    error = refusal(node, lambda stub: send(stub, "0.3", metadata=[*A, ("a2a-version", "0.3")]))
    assert error.code() == StatusCode.FAILED_PRECONDITION
    assert details(error)[0].reason == "VERSION_NOT_SUPPORTED"


def test_the_credential_alone_names_its_peer(node: LiveNode) -> None:
    answer = run(node, lambda stub: send(stub, "by key", metadata=[("x-api-key", KEY_A)]))
    assert answer.task.status.state == pb.TASK_STATE_COMPLETED


def test_another_peers_task_is_not_found_like_a_missing_one(node: LiveNode) -> None:
    task = run(node, lambda stub: send(stub, "mine")).task

    def get(task_id: str) -> grpc.aio.AioRpcError:
        return refusal(node, lambda stub: stub.GetTask(pb.GetTaskRequest(id=task_id),
                                                       metadata=B))

    theirs, missing = get(task.id), get(unique("no-such-task"))
    assert theirs.code() == missing.code() == StatusCode.NOT_FOUND
    assert theirs.details() == missing.details()
    assert [d.reason for d in details(theirs)] == [d.reason for d in details(missing)] == [
        "TASK_NOT_FOUND"]
    canceled = refusal(node, lambda stub: stub.CancelTask(pb.CancelTaskRequest(id=task.id),
                                                          metadata=B))
    assert canceled.code() == StatusCode.NOT_FOUND


def test_invalid_params_are_invalid_argument_with_the_violations(node: LiveNode) -> None:
    request = pb.SendMessageRequest(message=pb.Message(message_id=unique(), role=pb.ROLE_USER))
    error = refusal(node, lambda stub: stub.SendMessage(request, metadata=A))
    assert error.code() == StatusCode.INVALID_ARGUMENT
    bad = [d for d in details(error) if isinstance(d, error_details_pb2.BadRequest)]
    assert bad and bad[0].field_violations[0].field.startswith("message")


def test_an_unknown_tenant_is_invalid_argument(node: LiveNode) -> None:
    request = pb.GetTaskRequest(id="x", tenant="someone-else")
    error = refusal(node, lambda stub: stub.GetTask(request, metadata=A))
    assert error.code() == StatusCode.INVALID_ARGUMENT


def test_a_message_over_the_body_limit_is_resource_exhausted(node: LiveNode) -> None:
    async def body(stub: A2AServiceStub) -> Any:
        request = pb.SendMessageRequest(message=user_message("x" * (LIMIT + 1)))
        return await stub.SendMessage(request, metadata=A)

    assert refusal(node, body).code() == StatusCode.RESOURCE_EXHAUSTED


def test_bytes_that_are_not_the_request_are_invalid_argument(node: LiveNode) -> None:
    async def body(_: A2AServiceStub) -> Any:
        async with grpc.aio.insecure_channel(_target(node)) as channel:
            raw = channel.unary_unary("/lf.a2a.v1.A2AService/GetTask")
            return await raw(b"\xff\xff\xff", metadata=A)

    assert refusal(node, body).code() == StatusCode.INVALID_ARGUMENT


def test_a_refused_call_never_reaches_the_parser(node: LiveNode) -> None:
    async def body(_: A2AServiceStub) -> Any:
        async with grpc.aio.insecure_channel(_target(node)) as channel:
            raw = channel.unary_unary("/lf.a2a.v1.A2AService/GetTask")
            return await raw(b"\xff\xff\xff", metadata=[])

    assert refusal(node, body).code() == StatusCode.UNAUTHENTICATED


def test_over_the_rate_limit_is_resource_exhausted_with_retry_info(node: LiveNode) -> None:
    slow = _metadata(PEER_SLOW, KEY_SLOW)
    answer = run(node, lambda stub: send(stub, "the one call", metadata=slow))
    assert answer.task.status.state == pb.TASK_STATE_COMPLETED
    error = refusal(node, lambda stub: send(stub, "one too many", metadata=slow))
    assert error.code() == StatusCode.RESOURCE_EXHAUSTED
    [retry] = [d for d in details(error) if isinstance(d, error_details_pb2.RetryInfo)]
    assert retry.retry_delay.seconds >= 1
    event = node.wait_for_event("a2a.inbound.rejected", reason="rate_limited",
                                peer_name=PEER_SLOW)
    assert event["path"] == "/grpc"


def test_with_server_tls_grpc_is_served_over_tls_only(tmp_path: Path) -> None:
    ca = make_ca()
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    write_node(data_dir, "node", issue(ca, "node"))  # relative paths: the config's directory
    port = _free_port()
    config = f"""\
a2a:
  enabled: true
  allowed_peers: [{PEER_A}]
server:
  grpc_port: {port}
  tls: {{cert_file: node.pem, key_file: node.key}}
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
"""
    add_peer(data_dir, PEER_A, KEY_A)

    async def secure() -> pb.SendMessageResponse:
        credentials = grpc.ssl_channel_credentials(root_certificates=ca.pem)
        async with grpc.aio.secure_channel(f"127.0.0.1:{port}", credentials) as channel:
            return await send(A2AServiceStub(channel), "over tls")

    async def plain() -> grpc.StatusCode:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            try:
                await send(A2AServiceStub(channel), "in the clear")
            except grpc.aio.AioRpcError as error:
                return error.code()
        raise AssertionError("answered in the clear")

    with LiveNode(data_dir, config) as live:
        assert live.wait_for_event("a2a.grpc.listening")["tls"] is True
        answer = asyncio.run(secure())
        assert answer.task.status.state == pb.TASK_STATE_COMPLETED
        assert asyncio.run(plain()) == StatusCode.UNAVAILABLE


def test_with_several_workers_each_serves_the_grpc_port(tmp_path: Path) -> None:
    port = _free_port()
    config = f"""\
a2a:
  enabled: true
  allowed_peers: [{PEER_A}]
server:
  grpc_port: {port}
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
"""
    add_peer(tmp_path, PEER_A, KEY_A)

    async def calls() -> list[int]:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = A2AServiceStub(channel)
            answers = [await send(stub, f"call {n}") for n in range(4)]
            return [int(a.task.status.state) for a in answers]

    with LiveNode(tmp_path, config, env={"SYNTHORG_WORKERS": "2"}) as live:
        listening = live.wait_for_events("a2a.grpc.listening", 2, timeout=30)
        assert {event["port"] for event in listening} == {port}
        assert asyncio.run(calls()) == [pb.TASK_STATE_COMPLETED] * 4


def test_a_grpc_port_in_use_stops_the_node(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        config = (f"a2a:\n  enabled: true\n  allowed_peers: [{PEER_A}]\n"
                  f"server:\n  grpc_port: {port}\n")
        node = LiveNode(tmp_path, config).start()
        try:
            assert node.proc is not None and node.proc.wait(timeout=30) != 0
            node.wait_for_line(f"error: cannot listen for gRPC on 127.0.0.1:{port}")
        finally:
            node.stop()


def test_metadata_over_the_header_bound_is_refused(node: LiveNode) -> None:
    padded = [*A, ("x-padding", "p" * 33_000)]  # over server.max_header_bytes (32 KiB)
    error = refusal(node, lambda stub: send(stub, "padded", metadata=padded))
    assert error.code() == StatusCode.RESOURCE_EXHAUSTED
    assert "p" * 100 not in (error.details() or "")  # sizes are named, never values
    assert run(node, lambda stub: send(stub, "still served")).task.status.state == (
        pb.TASK_STATE_COMPLETED)


def test_free_form_metadata_round_trips_and_is_bounded_in_depth(node: LiveNode) -> None:
    message = user_message("metadata")
    message.metadata.update({"snake_case_key": {"tenant": "free-form, not a tenant"}})
    answer = run(node, lambda stub: stub.SendMessage(pb.SendMessageRequest(message=message),
                                                     metadata=A))
    echoed = answer.task.history[0].metadata
    assert echoed["snake_case_key"]["tenant"] == "free-form, not a tenant"
    deep: dict[str, Any] = {}
    # Deeper than the JSON-RPC endpoint's bound (32, from the params), though protobuf's own
    # (64 message levels: two per object) still parses it.
    for _ in range(31):
        deep = {"d": deep}
    nested = user_message("too deep")
    nested.metadata.update({"deep": deep})
    error = refusal(node, lambda stub: stub.SendMessage(pb.SendMessageRequest(message=nested),
                                                        metadata=A))
    assert error.code() == StatusCode.INVALID_ARGUMENT
    assert "deeper than" in (error.details() or "")


def test_calls_are_logged_and_counted_like_http_requests(node: LiveNode) -> None:
    """A call is one request to the access event, the metrics and the activity view:
    operation `grpc`, its RPC as the method, its gRPC status code as the status."""
    async def calls(stub: A2AServiceStub) -> None:
        await send(stub, "counted")
        with pytest.raises(grpc.aio.AioRpcError):
            await stub.GetTask(pb.GetTaskRequest(id="no-such-task"), metadata=A)
        with pytest.raises(grpc.aio.AioRpcError):
            await stub.GetTask(pb.GetTaskRequest(id="x"),
                               metadata=_metadata(PEER_A, "key-that-is-not-right-0"))

    run(node, calls)
    node.wait_for_event("a2a.inbound.completed", operation="grpc", method="SendMessage",
                        status=StatusCode.OK.value[0], peer_name=PEER_A)
    node.wait_for_event("a2a.inbound.completed", operation="grpc", method="GetTask",
                        status=StatusCode.NOT_FOUND.value[0], peer_name=PEER_A)
    node.wait_for_event("a2a.inbound.completed", operation="grpc", method="GetTask",
                        status=StatusCode.UNAUTHENTICATED.value[0], peer_name=PEER_A,
                        reason="credential_mismatch")
    with httpx.Client(base_url=node.url) as admin:
        scraped = admin.get("/metrics", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert scraped.status_code == 200
    assert ('synthorg_requests_total{dialect="1.0",method="SendMessage",'
            'operation="grpc",status="0"}') in scraped.text
    assert ('synthorg_requests_total{dialect="1.0",method="GetTask",'
            'operation="grpc",status="5"}') in scraped.text
    assert 'synthorg_gate_refusals_total{reason="credential_mismatch"}' in scraped.text
