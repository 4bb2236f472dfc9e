"""A Python client generated from a live node's /openapi.json talks to that node.

The generator is openapi-python-client (a pinned dev dependency), run as a subprocess on the
document exactly as the node serves it. The generated package is imported from a temporary
directory and used, with its own models, to send message/send, tasks/get and tasks/cancel.
A missing generator fails the test: this is what the published spec promises. The generated
client also runs the scenario list every generated client shares (tests/clients/scenarios.json;
the TypeScript package runs it too), so a spec change that breaks either generator fails.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
PACKAGE = "synthorg_a2a_client"
PEER, KEY = "peer-gen", "key-gen-4c1e9a7b3d5f"
CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{PEER}]
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
  - {{id: parker, name: Parker, executor: {{kind: park}}}}
"""
GENERATOR_CONFIG = f"package_name_override: {PACKAGE}\nproject_name_override: synthorg-a2a-client\n"
SCENARIOS = json.loads(
    (Path(__file__).resolve().parents[1] / "clients" / "scenarios.json").read_text()
)["scenarios"]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir = tmp_path_factory.mktemp("clientgen-node")
    add_peer(data_dir, PEER, KEY)
    with LiveNode(data_dir, CONFIG) as live:
        yield live


@pytest.fixture(scope="module")
def generated(node: LiveNode, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    if not GENERATOR.is_file():
        pytest.fail(
            f"{GENERATOR} is missing: openapi-python-client is a pinned dev dependency "
            "(pip install -e '.[dev]')"
        )
    work = tmp_path_factory.mktemp("clientgen")
    spec = work / "openapi.json"
    response = httpx.get(f"{node.url}/openapi.json", timeout=30.0)
    assert response.status_code == 200
    spec.write_bytes(response.content)
    config = work / "generator.yaml"
    config.write_text(GENERATOR_CONFIG)
    out = work / "out"
    # The generator formats its output with ruff, which lives next to it in the venv.
    env = {**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run(
        [
            str(GENERATOR),
            "generate",
            "--path",
            str(spec),
            "--config",
            str(config),
            "--meta",
            "none",
            "--output-path",
            str(out / PACKAGE),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=work,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # Any construct the generator could not handle is reported as a warning and left out.
    assert "warning" not in output.lower(), output
    sys.path.insert(0, str(out))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(out))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def sub(package: ModuleType, name: str) -> Any:
    return importlib.import_module(f"{package.__name__}.{name}")


class Api:
    """The generated package's pieces, by name."""

    def __init__(self, package: ModuleType, node: LiveNode, key: str | None = KEY) -> None:
        self.models = sub(package, "models")
        self.rpc = sub(package, "api.a2a.gateway_rpc")
        self.rpc_agent = sub(package, "api.a2a.gateway_agent_rpc")
        # The generated client's own auth, pointed at the peer credential header.
        self.client = sub(package, "client").AuthenticatedClient(
            base_url=node.url,
            token=key or "",
            auth_header_name="X-API-Key",
            prefix="",
            headers={"X-A2A-Peer-Name": PEER},
            raise_on_unexpected_status=True,
        )

    def message(self, text: str) -> Any:
        m = self.models
        return m.MessageSendRequest(
            jsonrpc="2.0",
            id=str(uuid.uuid4()),
            method="message/send",
            params=m.MessageSendParams(
                message=m.Message(
                    kind="message",
                    message_id=f"msg-{uuid.uuid4().hex}",
                    role=m.Role.USER,
                    parts=[m.TextPart(kind="text", text=text)],
                )
            ),
        )

    def get(self, task_id: str) -> Any:
        m = self.models
        params = m.TasksGetParams(id=task_id)
        return m.TasksGetRequest(jsonrpc="2.0", id=7, method="tasks/get", params=params)

    def cancel(self, task_id: str) -> Any:
        m = self.models
        params = m.TasksCancelParams(id=task_id)
        return m.TasksCancelRequest(jsonrpc="2.0", id=8, method="tasks/cancel", params=params)

    def task(self, response: Any, request: Any) -> Any:
        """The Task in a success envelope, read through the generated models."""
        assert response.status_code == 200, response.content
        envelope = response.parsed
        assert isinstance(envelope, self.models.JsonRpcSuccessResponse), response.content
        assert envelope.id == request.id
        assert isinstance(envelope.result, self.models.Task)
        return envelope.result


def test_message_send_then_tasks_get(generated: ModuleType, node: LiveNode) -> None:
    api = Api(generated, node)
    m = api.models
    with api.client as client:
        request = api.message("hello from a generated client")
        task = api.task(api.rpc.sync_detailed(client=client, body=request), request)
        assert task.kind == "task"
        assert task.status.state == m.TaskState.COMPLETED  # the default agent echoes
        [artifact] = task.artifacts
        [part] = artifact.parts
        assert isinstance(part, m.TextPart)
        assert part.text == "hello from a generated client"

        again = api.get(task.id)
        fetched = api.task(api.rpc.sync_detailed(client=client, body=again), again)
        assert (fetched.id, fetched.context_id) == (task.id, task.context_id)
        assert fetched.status.state == m.TaskState.COMPLETED
        assert fetched.history[0].role == m.Role.USER


def test_message_send_to_an_agent_then_tasks_cancel(generated: ModuleType, node: LiveNode) -> None:
    api = Api(generated, node)
    m = api.models
    with api.client as client:
        request = api.message("park this")
        response = api.rpc_agent.sync_detailed("parker", client=client, body=request)
        task = api.task(response, request)
        assert task.status.state == m.TaskState.INPUT_REQUIRED

        cancel = api.cancel(task.id)
        canceled = api.task(api.rpc.sync_detailed(client=client, body=cancel), cancel)
        assert canceled.id == task.id
        assert canceled.status.state == m.TaskState.CANCELED

        get = api.get(task.id)
        assert api.task(api.rpc.sync_detailed(client=client, body=get), get).status.state == (
            m.TaskState.CANCELED
        )


def test_errors_are_read_through_the_generated_models(
    generated: ModuleType, node: LiveNode
) -> None:
    api = Api(generated, node)
    m = api.models
    with api.client as client:
        missing = api.get("no-such-task")
        response = api.rpc.sync_detailed(client=client, body=missing)
        assert response.status_code == 200
        assert isinstance(response.parsed, m.JsonRpcErrorResponse)
        assert response.parsed.id == 7
        assert response.parsed.error.code == m.ErrorCode(-32001)

        done = api.cancel("no-such-task")
        parsed = api.rpc.sync(client=client, body=done)
        assert isinstance(parsed, m.JsonRpcErrorResponse)
        assert parsed.error.code == m.ErrorCode(-32001)

    wrong_key = Api(generated, node, key="not-the-key")
    with wrong_key.client as client:
        response = wrong_key.rpc.sync_detailed(client=client, body=api.get("x"))
        assert response.status_code == 401
        assert isinstance(response.parsed, m.JsonRpcErrorResponse)
        assert response.parsed.error.code == m.ErrorCode(-32003)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_the_shared_scenarios(generated: ModuleType, node: LiveNode, scenario: Any) -> None:
    """Each step through the generated client, as scenarios.json describes it."""
    last: str | None = None
    for index, step in enumerate(scenario["steps"]):
        where = f"step {index + 1} ({step['call']})"
        api = Api(generated, node, key=f"{KEY}-wrong" if step.get("credential") == "wrong" else KEY)
        task_id = last if step.get("task") == "$last" else step.get("task")
        if step["call"] == "send":
            request = api.message(step["text"])
        else:
            assert task_id is not None, where
            request = api.get(task_id) if step["call"] == "get" else api.cancel(task_id)
        with api.client as client:
            if step.get("agent"):
                response = api.rpc_agent.sync_detailed(step["agent"], client=client, body=request)
            else:
                response = api.rpc.sync_detailed(client=client, body=request)
        expect = step["expect"]
        if "error" in expect:
            assert response.status_code == expect.get("http", 200), where
            assert isinstance(response.parsed, api.models.JsonRpcErrorResponse), where
            assert response.parsed.error.code == api.models.ErrorCode(expect["error"]), where
            continue
        task = api.task(response, request)
        last = task.id
        if "state" in expect:
            assert task.status.state == api.models.TaskState(expect["state"]), where
        if "artifactText" in expect:
            assert task.artifacts[0].parts[0].text == expect["artifactText"], where
        if "firstHistoryRole" in expect:
            assert task.history[0].role == api.models.Role(expect["firstHistoryRole"]), where
