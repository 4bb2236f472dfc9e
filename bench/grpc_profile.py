"""Where one gRPC GetTask call of the node spends its CPU time, stage by stage, in process.

The node's servicer (its real gates, SQLite store, observers and event lines) serves on a
grpc.aio server in this process, on uvloop as the node does, with each stage of a call wrapped
in a CPU clock of the event loop's thread; h2load (on another CPU) sends the calls one at a
time, so no other call runs while a stage awaits. Beside it, on the same server, a bare
handler answers the same task's bytes: what grpcio and the event loop cost per call without
any of the node's work. The process's whole CPU time per call, minus the stages, is what
grpcio (its C core and poller thread) and the event loop spent on the call.

    .venv/bin/python -m bench.grpc_profile [--calls N] [--rounds R]

Stages: `record` (the metadata as raw headers, the access record, its observers' start),
`admission` (store check, gates, rate limit), `parse` (the request message, its ProtoJSON
document, the params model), `handler` (the store read, the task as its 1.0 model),
`convert` (model to document to response message), `serialise` (the message's bytes),
`finish` (the access event and the observers' end, metrics included).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import grpc
import uvloop

from bench.bindings import GET_TASK, grpc_frame, parse_h2load
from bench.pipeline import stderr_to_a_drained_pipe
from bench.system import plan_pinning
from synthorg.gateway.admission import AdmissionWatch
from synthorg.gateway.context import Services
from synthorg.gateway.dispatch import Route
from synthorg.gateway.endpoint import GatewayConfig
from synthorg.generated.grpc import a2a_pb2 as pb
from synthorg.grpc import service
from synthorg.node import Node
from synthorg.observability import log
from synthorg.observability.access import Observer

PEER, SECRET = "bench-peer", "bench-link-secret-0123456789"
FLOOR = "/bench.Floor/GetTask"
STAGES = ("record", "admission", "parse", "handler", "convert", "serialise", "finish")
P = ParamSpec("P")
R = TypeVar("R")


class Clock:
    """CPU seconds of this thread spent in each stage."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)

    def sync(self, stage: str, call: Callable[P, R]) -> Callable[P, R]:
        def timed(*args: P.args, **kwargs: P.kwargs) -> R:
            started = time.thread_time()
            try:
                return call(*args, **kwargs)
            finally:
                self.spent[stage] += time.thread_time() - started

        return timed

    def awaited(self, stage: str,
                call: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        async def timed(*args: P.args, **kwargs: P.kwargs) -> R:
            started = time.thread_time()
            try:
                return await call(*args, **kwargs)
            finally:
                self.spent[stage] += time.thread_time() - started

        return timed


class TimedServicer(service.A2AServicer):
    """The node's servicer, each stage of a call on `clock`."""

    def __init__(self, clock: Clock, *args: Any) -> None:
        super().__init__(*args)
        self.clock = clock
        self._record = clock.sync("record", self._record)  # type: ignore[method-assign]
        self._admit = clock.awaited("admission", self._admit)  # type: ignore[method-assign,assignment]
        self._params = clock.awaited("parse", self._params)  # type: ignore[method-assign,assignment]

    def _unary(self, name: str, route: Route, request_cls: Any, response_cls: Any) -> Any:
        assert route.handler is not None
        timed = route._replace(handler=self.clock.awaited("handler", route.handler))
        return super()._unary(name, timed, request_cls, response_cls)


def build_node(data_dir: Path) -> Node:
    (data_dir / "config.yaml").write_text(
        f"a2a:\n  enabled: true\n  allowed_peers: [{PEER}]\n"
        "agents:\n  - {id: echo, name: Echo, executor: {kind: echo}}\n")
    node = Node.build(data_dir)
    node.catalog.put(PEER, "http://127.0.0.1:9", "api_key", SECRET)
    return node


def gateway_config(node: Node) -> GatewayConfig:
    """The gateway config `Node.app` serves with (both bindings share it)."""
    return GatewayConfig(
        enabled=True, max_request_body_bytes=node.config.a2a.max_request_body_bytes,
        gate=node.gate, agent_ids=frozenset(agent.id for agent in node.config.agents),
        services=Services(node.tasks, node.skills, node.push, node.cards),
        request_started=node.stores.request_started, limiter=node._rate_limiter(),
        admission=AdmissionWatch(node.gate, node.stores.request_started),
    )


async def h2load(path: str, port: int, body: Path, reply_bytes: int, calls: int,
                 pin: list[str], metadata: bool) -> None:
    command = [*pin, shutil.which("h2load") or "h2load", "-c", "1", "-m", "1", "-n",
               str(calls), "-d", str(body), "-H", "content-type: application/grpc",
               "-H", "te: trailers", f"http://127.0.0.1:{port}{path}"]
    if metadata:
        command[-1:-1] = ["-H", f"x-a2a-peer-name: {PEER}", "-H", f"x-api-key: {SECRET}"]
    proc = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"h2load exited {proc.returncode}: {err.decode()[-300:]}")
    parse_h2load(out.decode(), reply_bytes)  # every call answered the task


Medians = dict[str, float]


async def run(calls: int, rounds: int) -> tuple[Medians, Medians, Medians]:
    """Median CPU µs per call: each stage's; the node call's on the loop's thread (`loop`)
    and on the others (`threads`: grpcio's poller, the event line writer, ...); the bare
    handler's alike."""
    pinning = plan_pinning()
    if pinning.server_cpu is not None:
        os.sched_setaffinity(0, {pinning.server_cpu})
    log.configure_logging("info")
    with tempfile.TemporaryDirectory(prefix="bench-grpc-profile-") as tmp:
        workdir = Path(tmp)
        node = build_node(workdir)
        await node.recover()
        clock = Clock()
        observers: list[Observer] = [node.activity]
        if node.metrics is not None:
            observers.append(node.metrics)
        servicer = TimedServicer(clock, gateway_config(node), {"scheme": "http"},
                                 tuple(observers))
        plain = (service.result_message, service._serialize, service._finish)
        service.result_message = clock.sync("convert", service.result_message)
        service._serialize = clock.sync("serialise", service._serialize)
        service._finish = clock.sync("finish", service._finish)
        server = grpc.aio.server()
        try:
            server.add_generic_rpc_handlers((servicer.handler(),))
            port = server.add_insecure_port("127.0.0.1:0")
            await server.start()
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                send = channel.unary_unary("/lf.a2a.v1.A2AService/SendMessage",
                                           request_serializer=pb.SendMessageRequest.SerializeToString,
                                           response_deserializer=pb.SendMessageResponse.FromString)
                sent = await send(pb.SendMessageRequest(message=pb.Message(
                    message_id="bench-1", role=pb.ROLE_USER, parts=[pb.Part(text="bindings bench")],
                    metadata={"agentId": "echo"})),
                    metadata=(("x-a2a-peer-name", PEER), ("x-api-key", SECRET)))
                get: grpc.aio.UnaryUnaryMultiCallable[pb.GetTaskRequest, bytes]
                get = channel.unary_unary(GET_TASK,
                                          request_serializer=pb.GetTaskRequest.SerializeToString,
                                          response_deserializer=None)
                task: bytes = await get(pb.GetTaskRequest(id=sent.task.id),
                                        metadata=(("x-a2a-peer-name", PEER),
                                                  ("x-api-key", SECRET)))

            async def floor(request: bytes, context: Any) -> bytes:
                return task

            server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
                "bench.Floor", {"GetTask": grpc.unary_unary_rpc_method_handler(floor)}),))
            body = workdir / "get_task.bin"
            body.write_bytes(grpc_frame(pb.GetTaskRequest(id=sent.task.id).SerializeToString()))
            stages: dict[str, list[float]] = defaultdict(list)
            totals: dict[str, list[float]] = defaultdict(list)
            floors: dict[str, list[float]] = defaultdict(list)
            for _ in range(rounds):
                for path in (GET_TASK, FLOOR):
                    clock.spent.clear()
                    process, loop = time.process_time(), time.thread_time()
                    await h2load(path, port, body, len(task), calls, pinning.load,
                                 metadata=path == GET_TASK)
                    loop = time.thread_time() - loop
                    process = time.process_time() - process
                    into = floors if path == FLOOR else totals
                    into["loop"].append(loop / calls * 1e6)
                    into["threads"].append((process - loop) / calls * 1e6)
                    if path == GET_TASK:
                        for stage in STAGES:
                            stages[stage].append(clock.spent[stage] / calls * 1e6)
        finally:
            await server.stop(None)
            service.result_message, service._serialize, service._finish = plain
            node.close()
    return tuple({key: statistics.median(values) for key, values in medians.items()}
                 for medians in (stages, totals, floors))  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.grpc_profile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=3000, help="calls per round (default 3000)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    with stderr_to_a_drained_pipe():
        stages, total, floor = uvloop.run(run(args.calls, args.rounds))
    print(f"gRPC GetTask, CPU µs per call (median of {args.rounds} rounds of {args.calls} "
          "sequential calls)")
    print(f"  {'':<40}{'node':>8}{'bare':>8}")
    for stage in STAGES:
        print(f"  {stage:<40}{stages[stage]:>8.1f}{'':>8}")
    rest = total["loop"] - sum(stages.values())
    print(f"  {'grpcio + event loop, on the loop thread':<40}{rest:>8.1f}{floor['loop']:>8.1f}")
    print(f"  {'other threads (grpc poller, log writer)':<40}{total['threads']:>8.1f}"
          f"{floor['threads']:>8.1f}")
    print(f"  {'whole call':<40}{total['loop'] + total['threads']:>8.1f}"
          f"{floor['loop'] + floor['threads']:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
