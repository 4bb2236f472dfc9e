"""The deliverer's HTTP/1.1 client against real servers on 127.0.0.1: what it writes, the
connections it keeps and reuses, and the bounds on what a receiver can make it do."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from examples.make_test_ca import issue, make_ca, write_node
from synthorg.push.sender import (
    MAX_RESPONSE_BYTES,
    PIN_MISMATCH,
    BadHeader,
    Peering,
    PinnedSender,
    SendError,
    request_target,
)
from synthorg.push.ssrf import Target
from synthorg.tls.context import TlsFiles, client_context, server_context
from synthorg.tls.pins import pin_of
from tests.support.scripted_server import Answer, ScriptedServer

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def target(port: int, host: str = "receiver.example") -> Target:
    return Target("http", host, port, ("127.0.0.1",), None)


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    return head + await reader.readexactly(length)


async def with_server(handler: Handler, body: Callable[[int], Awaitable[None]]) -> None:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    try:
        await body(server.sockets[0].getsockname()[1])
    finally:
        server.close()


def test_a_push_is_written_pinned_with_its_headers_and_the_connection_is_reused() -> None:
    with ScriptedServer() as receiver:
        receiver.script.extend([Answer(204), Answer(202)])
        port = int(receiver.url.rsplit(":", 1)[1])

        async def go() -> list[int]:
            sender = PinnedSender()
            headers = {"Host": f"receiver.example:{port}", "X-A2A-Delivery-Id": "d-1"}
            url = f"http://receiver.example:{port}/hook/a b?x=1"
            try:
                return [await sender.post(target(port), url, headers, b'{"a":1}', 5.0)
                        for _ in range(2)]
            finally:
                await sender.aclose()

        assert asyncio.run(go()) == [204, 202]
    first, second = receiver.received
    assert first.path == "/hook/a%20b?x=1" and first.body == b'{"a":1}'
    assert first.headers["Host"] == f"receiver.example:{port}"
    assert first.headers["X-A2A-Delivery-Id"] == "d-1"
    assert first.headers["Content-Length"] == "7"
    assert second.body == b'{"a":1}'


def test_one_connection_carries_many_pushes_and_a_closed_one_is_replaced() -> None:
    connections: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        for _ in range(3):  # then close, as a receiver's keep-alive limit would
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
        writer.close()

    async def body(port: int) -> None:
        sender = PinnedSender()
        statuses = [await sender.post(target(port), "http://r/", {}, b"x", 5.0)
                    for _ in range(7)]
        await sender.aclose()
        assert statuses == [200] * 7

    asyncio.run(with_server(handler, body))
    assert len(connections) == 3  # 3 + 3 + 1 pushes


def test_a_chunked_answer_is_read_to_its_end() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            writer.write(b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
                         b"3\r\nabc\r\n0\r\n\r\n")
            await writer.drain()

    async def body(port: int) -> None:
        sender = PinnedSender()
        assert [await sender.post(target(port), "http://r/", {}, b"x", 5.0)
                for _ in range(2)] == [201, 201]
        await sender.aclose()

    asyncio.run(with_server(handler, body))


def test_an_endless_answer_is_cut_at_the_bound_and_its_status_kept() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 999999999\r\n\r\n")
        chunk = b"z" * 65536
        try:
            for _ in range(MAX_RESPONSE_BYTES // len(chunk) + 64):
                writer.write(chunk)
                await writer.drain()
        except ConnectionError:
            pass  # the client hung up: what the bound is for

    async def body(port: int) -> None:
        sender = PinnedSender()
        assert await sender.post(target(port), "http://r/", {}, b"x", 10.0) == 200
        await sender.aclose()

    asyncio.run(with_server(handler, body))


def test_no_answer_and_a_timeout_are_send_errors() -> None:
    release = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.close()  # hangs up without a status line

    async def stalled(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await release.wait()
        writer.close()

    async def hung_up(port: int) -> None:
        with pytest.raises(SendError):
            await PinnedSender().post(target(port), "http://r/", {}, b"x", 5.0)

    async def times_out(port: int) -> None:
        with pytest.raises(SendError, match="timed out"):
            await PinnedSender().post(target(port), "http://r/", {}, b"x", 0.2)
        release.set()

    asyncio.run(with_server(silent, hung_up))
    asyncio.run(with_server(stalled, times_out))


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n",
    b"NOT HTTP AT ALL\r\n\r\n",
])
def test_an_upgrade_or_garbage_is_a_send_error(answer: bytes) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer)
        await writer.drain()

    async def body(port: int) -> None:
        with pytest.raises(SendError):
            await PinnedSender().post(target(port), "http://r/", {}, b"x", 5.0)

    asyncio.run(with_server(handler, body))


def test_nothing_listening_is_a_send_error() -> None:
    async def go() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        with pytest.raises(SendError):
            await PinnedSender().post(target(port), "http://r/", {}, b"x", 5.0)

    asyncio.run(go())


@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nb", "nul\0", "snow\u2603"])
def test_a_header_value_http_cannot_carry_is_refused_before_anything_is_sent(
    value: str,
) -> None:
    async def go() -> None:
        # port 9 (discard): nothing may be connected to, the refusal comes first
        with pytest.raises(BadHeader):
            await PinnedSender().post(target(9), "http://r/", {"X-Token": value}, b"x", 5.0)

    asyncio.run(go())


def test_the_request_target_is_the_path_and_query_encoded() -> None:
    assert request_target("http://h") == "/"
    assert request_target("http://h/a/b?c=d&e") == "/a/b?c=d&e"
    assert request_target("http://h/a b/\u00e9?q=\u00e9 x") == "/a%20b/%C3%A9?q=%C3%A9%20x"
    assert request_target("http://h/p#frag") == "/p"


def test_idle_connections_are_bounded_in_all_and_by_age() -> None:
    opened: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        opened.append(1)
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                await read_request(reader)
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
                await writer.drain()

    async def go() -> None:
        servers = [await asyncio.start_server(handler, "127.0.0.1", 0) for _ in range(5)]
        ports = [server.sockets[0].getsockname()[1] for server in servers]
        try:
            bounded = PinnedSender(max_idle=3)
            for port in ports:  # one kept per target, the oldest closed past 3
                assert await bounded.post(target(port), "http://r/", {}, b"x", 5.0) == 204
                assert bounded.idle == min(3, ports.index(port) + 1)
            assert await bounded.post(target(ports[-1]), "http://r/", {}, b"x", 5.0) == 204
            assert len(opened) == 5  # the most recent target's connection was reused
            await bounded.aclose()
            stale = PinnedSender(idle_seconds=-1.0)  # nothing is fresh enough to reuse
            for _ in range(2):
                assert await stale.post(target(ports[0]), "http://r/", {}, b"x", 5.0) == 204
            assert len(opened) == 7
            await stale.aclose()
        finally:
            for server in servers:
                server.close()

    asyncio.run(go())


def test_an_mtls_owner_gets_the_client_certificate_and_only_at_its_pinned_key(
        tmp_path: Path) -> None:
    ca = make_ca()
    issued = {name: issue(ca, name) for name in ("receiver", "sender", "other")}
    for name, certificate in issued.items():
        write_node(tmp_path, name, certificate)
    (tmp_path / "ca.pem").write_bytes(ca.pem)
    server_files = TlsFiles(tmp_path / "receiver.pem", tmp_path / "receiver.key",
                            tmp_path / "ca.pem")
    client = client_context(TlsFiles(tmp_path / "sender.pem", tmp_path / "sender.key",
                                     tmp_path / "ca.pem"))
    shown: list[bytes | None] = []
    written: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        shown.append(writer.get_extra_info("ssl_object").getpeercert(binary_form=True))
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            written.append(await read_request(reader))
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
            await writer.drain()
        writer.close()

    async def go() -> tuple[int, str]:
        server = await asyncio.start_server(handler, "127.0.0.1", 0,
                                            ssl=server_context(server_files))
        port = server.sockets[0].getsockname()[1]
        aimed = Target("https", "127.0.0.1", port, ("127.0.0.1",), "owner")
        url = f"https://127.0.0.1:{port}/api/v1/webhooks/me/a2a_push"
        sender = PinnedSender()
        try:
            status = await sender.post(aimed, url, {"Host": f"127.0.0.1:{port}"}, b"{}", 5.0,
                                       Peering(client, issued["receiver"].pin))
            with pytest.raises(SendError) as refused:
                await sender.post(aimed, url, {"Host": f"127.0.0.1:{port}"}, b"{}", 5.0,
                                  Peering(client, issued["other"].pin))
            return status, str(refused.value)
        finally:
            await sender.aclose()
            server.close()

    status, refusal = asyncio.run(go())
    assert status == 204 and refusal == PIN_MISMATCH
    # the node's certificate was shown on both connections; only the pinned one got a request
    assert [pin_of(der) for der in shown if der] == [issued["sender"].pin] * 2
    assert len(written) == 1
