"""The rows of the live bench: a scenario is (name, server launcher, method, load).

Scenarios sharing a launcher run one after another on one server process, in list order. The
load is built against the running server (e.g. tasks/get first creates the task it reads) and
checked once with a plain request before wrk runs it. `method` pairs a row with the a2a-sdk
row of the same method for the "x sdk" ratio (the 0.3 SDK's tasks/get and message/send, the
1.3.0 SDK's GetTask, A2A 1.0 with `A2A-Version: 1.0`); the floor row is the one whose launcher
has kind "floor".

A new row is one more `Scenario`: e.g. a node with two workers,
`NodeLauncher("node-w2", args=("--workers", "2"))`. The PostgreSQL rows run the node on a
throwaway database (`PgNodeLauncher`): one replica, and two replicas (two node processes on
two ports sharing the database, wrk's threads spread over both ports).
"""

from __future__ import annotations

import http.client
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.serve import RPC_PATH
from bench.servers import (
    SDK1_PYTHON,
    SDK1_SETUP,
    Launcher,
    ModuleLauncher,
    NodeLauncher,
    PgNodeLauncher,
    Server,
)
from bench.wrk import Load, message_send

TEXT = "hello from the bench"
V1 = {"A2A-Version": "1.0"}  # A2A 1.0 JSON-RPC (methods GetTask, SendMessage, …)


class ProbeError(RuntimeError):
    pass


@dataclass(frozen=True)
class Scenario:
    name: str
    launcher: Launcher
    method: str  # "echo", "tasks/get", "message/send", "refused", "GetTask" (A2A 1.0)
    load: Callable[[Server], Load]


def post(server: Server, body: bytes, headers: dict[str, str],
         path: str = RPC_PATH) -> tuple[int, Any]:
    """One request with the standard library; the status and the decoded JSON answer."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("POST", path, body=body,
                     headers={"Content-Type": "application/json", **headers})
        response = conn.getresponse()
        raw = response.read()
    finally:
        conn.close()
    try:
        return response.status, json.loads(raw)
    except ValueError:
        return response.status, raw[:200].decode(errors="replace")


def probe(server: Server, load: Load) -> str:
    """Send one request of `load`; raise ProbeError unless it gets the expected answer."""
    status, answer = post(server, load.sample_body(f"probe-{uuid.uuid4()}"), load.headers,
                          load.path)
    if status != load.expect_status:
        raise ProbeError(f"probe answered {status}, expected {load.expect_status}: {answer}")
    if not isinstance(answer, dict):
        raise ProbeError(f"probe answer is not a JSON object: {answer}")
    if load.expect_status == 200:
        if "result" not in answer:
            raise ProbeError(f"probe answered an error: {answer.get('error')}")
        result = answer["result"]
        asked = _task_asked(load.body)
        if asked is not None and "status" in result and result.get("id") != asked:
            raise ProbeError(f"probe asked for task {asked}, answered {result}")
        state = (result.get("status") or {}).get("state")
        return f"{status} result" + (f" ({state})" if state else "")
    return f"{status} error {(answer.get('error') or {}).get('code')}"


def _task_asked(body: bytes) -> str | None:
    """The task id a tasks/get or GetTask body asks for (None for any other body)."""
    try:
        request = json.loads(body) if body else None
    except ValueError:
        return None
    if not isinstance(request, dict) or request.get("method") not in ("tasks/get", "GetTask"):
        return None
    asked = (request.get("params") or {}).get("id")
    return asked if isinstance(asked, str) else None


def create_task(server: Server) -> str:
    body = message_send(f"setup-{uuid.uuid4()}", TEXT)
    status, answer = post(server, body, server.headers)
    try:
        task_id: str = answer["result"]["id"]
    except (TypeError, KeyError) as exc:
        raise ProbeError(f"could not create a task ({status}): {answer}") from exc
    return task_id


def tasks_get_body(task_id: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tasks/get",
                       "params": {"id": task_id}}, separators=(",", ":")).encode()


def create_task_v1(server: Server) -> str:
    """A task of the server's echo agent, created with A2A 1.0 SendMessage."""
    message = {"messageId": f"setup-{uuid.uuid4()}", "role": "ROLE_USER",
               "parts": [{"text": TEXT}]}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                       "params": {"message": message}}, separators=(",", ":")).encode()
    status, answer = post(server, body, {**server.headers, **V1})
    try:
        task_id: str = answer["result"]["task"]["id"]
    except (TypeError, KeyError) as exc:
        raise ProbeError(f"could not create a task ({status}): {answer}") from exc
    return task_id


def get_task_body(task_id: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                       "params": {"id": task_id}}, separators=(",", ":")).encode()


def echo(server: Server) -> Load:
    return Load(server.headers, body=tasks_get_body(str(uuid.uuid4())))


def tasks_get(server: Server) -> Load:
    """The task is created through the first process; every replica reads it."""
    return Load(server.headers, body=tasks_get_body(create_task(server)), ports=server.ports)


def get_task(server: Server) -> Load:
    """tasks/get's A2A 1.0 form: the same kind of task (completed, one echo artifact, the
    user message in its history), created and read over 1.0."""
    return Load({**server.headers, **V1}, body=get_task_body(create_task_v1(server)),
                ports=server.ports)


def send(server: Server) -> Load:
    return Load(server.headers, message_text=TEXT, ports=server.ports)


def refused(server: Server) -> Load:
    """The right peer name, a wrong key: gate 3 answers 401 before the body is read."""
    wrong = {**server.headers, "X-API-Key": "not-" + server.headers.get("X-API-Key", "")}
    return Load(wrong, body=tasks_get_body(str(uuid.uuid4())), expect_status=401)


FLOOR = ModuleLauncher("floor", "floor", "bench.floor_app")
SDK = ModuleLauncher("a2a-sdk", "sdk", "bench.sdk_app")
SDK1 = ModuleLauncher("a2a-sdk 1.3.0", "sdk", "bench.sdk1_jsonrpc_app", python=SDK1_PYTHON,
                      setup=SDK1_SETUP)
NODE = NodeLauncher("node")
# Metrics and traces both off, and both on (traces exported to a local OTLP sink): with the
# standard head sampling of a busy service (1% of the traces this node starts; a caller's
# sampled flag is always followed), and with every trace recorded.
NODE_OBS_OFF = NodeLauncher("node-obs-off", config="observability:\n  metrics: false\n")
NODE_OBS_ON = NodeLauncher("node-obs-on", traced=True, env=(
    ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"), ("OTEL_TRACES_SAMPLER_ARG", "0.01")))
NODE_OBS_ALL = NodeLauncher("node-obs-all", traced=True)
NODE_PG = PgNodeLauncher("node-pg")
NODE_PG_2 = PgNodeLauncher("node-pg-x2", replicas=2)

SCENARIOS = (
    Scenario("floor: JSON-RPC echo", FLOOR, "echo", echo),
    Scenario("a2a-sdk: tasks/get", SDK, "tasks/get", tasks_get),
    Scenario("a2a-sdk: message/send", SDK, "message/send", send),
    Scenario("a2a-sdk 1.3.0: GetTask", SDK1, "GetTask", get_task),
    Scenario("node: tasks/get (3 gates)", NODE, "tasks/get", tasks_get),
    Scenario("node: GetTask (1.0, 3 gates)", NODE, "GetTask", get_task),
    Scenario("node: message/send (durable)", NODE, "message/send", send),
    Scenario("node: 401 wrong key", NODE, "refused", refused),
    Scenario("node, metrics+traces off: tasks/get", NODE_OBS_OFF, "tasks/get", tasks_get),
    Scenario("node, metrics+traces on: tasks/get", NODE_OBS_ON, "tasks/get", tasks_get),
    Scenario("node, metrics+traces on, all sampled: tasks/get", NODE_OBS_ALL, "tasks/get",
             tasks_get),
    Scenario("node-pg: tasks/get", NODE_PG, "tasks/get", tasks_get),
    Scenario("node-pg: message/send", NODE_PG, "message/send", send),
    Scenario("node-pg x2: tasks/get", NODE_PG_2, "tasks/get", tasks_get),
    Scenario("node-pg x2: message/send", NODE_PG_2, "message/send", send),
)
