"""The live bench's GetTask rows answer what they should: the official a2a-sdk 1.3.0's JSON-RPC
server (`bench/sdk1_jsonrpc_app.py`, run by `.venv-sdk1`) and this node, each started by the
bench's own launcher (unpinned), each given the row's load (a task created with SendMessage)
and probed as the bench probes a row before wrk runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.scenarios import NODE, SDK1, get_task, post, probe
from bench.servers import Launcher
from tests.support.sdk1 import needs_sdk1

pytestmark = needs_sdk1


@pytest.mark.parametrize("launcher", [SDK1, NODE], ids=["a2a-sdk 1.3.0", "node"])
def test_the_getTask_row_probes_a_completed_echo_task(launcher: Launcher,
                                                      tmp_path: Path) -> None:
    server = launcher.start(tmp_path, [])
    try:
        load = get_task(server)
        assert load.headers["A2A-Version"] == "1.0"
        assert probe(server, load) == "200 result (TASK_STATE_COMPLETED)"
        status, answer = post(server, load.body, load.headers)
        task = answer["result"]
        assert status == 200 and task["id"] == json.loads(load.body)["params"]["id"]
        assert [part["text"] for artifact in task["artifacts"] for part in artifact["parts"]] \
            == ["hello from the bench"]
        assert task["history"][0]["role"] == "ROLE_USER"
    finally:
        server.stop()
