"""One caller's round trip over the gRPC binding against the same call over JSON-RPC, in one
run against one live node (the same gates, handlers and store behind both).

    .venv/bin/python -m bench.grpc_binding [--n N] [--rounds R]

Sequential calls on one kept-alive connection each (an HTTP/1.1 keep-alive connection with
httpx; one HTTP/2 channel with grpc.aio), alternating rounds so drift hits both alike:
`GetTask` of one task and `SendMessage` to the echo agent. Prints the median microseconds per
call of each and the ratio gRPC / JSON-RPC. Compare ratios, not absolute numbers, across
machines.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import httpx

from synthorg.generated.grpc import a2a_pb2 as pb
from tests.support.catalog import add_peer
from tests.support.node import NodeProcess

PEER, KEY = "bench-peer", "bench-peer-key-4e2a9c7b1d3f"
HEADERS = {"X-A2A-Peer-Name": PEER, "X-API-Key": KEY, "A2A-Version": "1.0"}
METADATA = (("x-a2a-peer-name", PEER), ("x-api-key", KEY))
SERVICE = "/lf.a2a.v1.A2AService"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _message() -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "bench"}]}


async def _timed(call: Callable[[], Awaitable[Any]], n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        await call()
    return (time.perf_counter() - started) / n * 1e6


async def measure(rpc_url: str, target: str, n: int, rounds: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    async with httpx.AsyncClient(headers=HEADERS, timeout=30) as http, \
            grpc.aio.insecure_channel(target) as channel:
        get_task = channel.unary_unary(
            f"{SERVICE}/GetTask", request_serializer=pb.GetTaskRequest.SerializeToString,
            response_deserializer=pb.Task.FromString)
        send_message = channel.unary_unary(
            f"{SERVICE}/SendMessage", request_serializer=pb.SendMessageRequest.SerializeToString,
            response_deserializer=pb.SendMessageResponse.FromString)
        created = await send_message(pb.SendMessageRequest(
            message=pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER,
                               parts=[pb.Part(text="bench")])), metadata=METADATA)
        task_id = created.task.id

        async def rpc(method: str, params: dict[str, Any]) -> None:
            answer = await http.post(rpc_url, json={"jsonrpc": "2.0", "id": 1,
                                                    "method": method, "params": params})
            assert "result" in answer.json(), answer.text

        calls: dict[str, Callable[[], Awaitable[Any]]] = {
            "GetTask json-rpc": lambda: rpc("GetTask", {"id": task_id}),
            "GetTask grpc": lambda: get_task(pb.GetTaskRequest(id=task_id), metadata=METADATA),
            "SendMessage json-rpc": lambda: rpc("SendMessage", {"message": _message()}),
            "SendMessage grpc": lambda: send_message(pb.SendMessageRequest(
                message=pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER,
                                   parts=[pb.Part(text="bench")])), metadata=METADATA),
        }
        for name, call in calls.items():  # warm up both paths
            await _timed(call, 20)
            results[name] = []
        for _ in range(rounds):
            for name, call in calls.items():
                results[name].append(await _timed(call, n))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.grpc_binding")
    parser.add_argument("--n", type=int, default=300, help="calls per round and operation")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    port = _free_port()
    config = (f"a2a:\n  enabled: true\n  allowed_peers: [{PEER}]\nserver:\n  grpc_port: {port}\n"
              "agents:\n  - {id: echo, name: Echo, executor: {kind: echo}}\n")
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        add_peer(data_dir, PEER, KEY)
        with NodeProcess(data_dir, config) as node:
            httpx.get(f"{node.url}/healthz", timeout=10)  # served once its lifespan started
            results = asyncio.run(measure(node.rpc_url, f"127.0.0.1:{port}", args.n,
                                          args.rounds))
    median = {name: statistics.median(values) for name, values in results.items()}
    print(f"{'call':<22}{'µs/call (median)':>18}")
    for name, value in median.items():
        print(f"{name:<22}{value:>18.0f}")
    for operation in ("GetTask", "SendMessage"):
        ratio = median[f"{operation} grpc"] / median[f"{operation} json-rpc"]
        print(f"{operation}: grpc / json-rpc = {ratio:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
