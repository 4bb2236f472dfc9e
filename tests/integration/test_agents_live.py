"""Agents as plug-ins (`executor: {kind: python}`), on a live node with the example agent.

The example agent (examples/slow_writer.py) reports progress and appends its artifact in
chunks; the tests make it fast, or slow enough to cancel midway, through its options. Waits
poll the task with a deadline; nothing sleeps for synchronisation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.helpers import (
    Json,
    call,
    cancel_task,
    expect_result,
    get_task,
    message,
)
from tests.integration.live import LiveNode
from tests.integration.test_config_failures import error_lines, run_node
from tests.support.catalog import add_peer
from tests.support.codes import TASK_BUSY

PEER, KEY = "peer-agents", "key-agents-4d2a6c8e0b1f"
DEADLINE = 20.0

CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{PEER}]
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
  - id: quick
    name: Quick writer
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {{seconds: 0.2, chunks: 4}}
  - id: slow
    name: Slow writer
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {{seconds: 60, chunks: 60}}
"""


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir: Path = tmp_path_factory.mktemp("agents")
    add_peer(data_dir, PEER, KEY)
    with LiveNode(data_dir, CONFIG) as live:
        yield live


@pytest.fixture()
def client(node: LiveNode) -> Iterator[httpx.Client]:
    with node.client(PEER, KEY) as peer_client:
        yield peer_client


def start(client: httpx.Client, agent: str, text: str, blocking: bool) -> Json:
    params = {"message": message(text, agent_id=agent), "configuration": {"blocking": blocking}}
    return expect_result(call(client, "message/send", params))


def wait_for(client: httpx.Client, task_id: str, done: Callable[[Json], bool]) -> Json:
    deadline = time.monotonic() + DEADLINE
    while True:
        task = expect_result(get_task(client, task_id))
        if done(task):
            return task
        assert time.monotonic() < deadline, task


def chunks(task: Json) -> list[str]:
    artifacts = task.get("artifacts") or []
    return [p["text"] for a in artifacts for p in a["parts"]]


def test_blocking_send_answers_the_finished_task_with_every_chunk(client: httpx.Client) -> None:
    task = start(client, "quick", "hello", blocking=True)
    assert task["status"]["state"] == "completed"
    assert chunks(task) == [f"[{n}] hello\n" for n in range(1, 5)]
    assert len(task["artifacts"]) == 1


def test_non_blocking_send_answers_working_and_the_task_finishes(client: httpx.Client) -> None:
    task = start(client, "quick", "later", blocking=False)
    assert task["status"]["state"] == "working"
    done = wait_for(client, task["id"], lambda t: t["status"]["state"] == "completed")
    assert len(chunks(done)) == 4


def test_progress_is_visible_while_the_agent_works_and_cancel_stops_it(
    client: httpx.Client,
) -> None:
    task = start(client, "slow", "long", blocking=False)
    midway = wait_for(client, task["id"], lambda t: len(chunks(t)) >= 1)
    assert midway["status"]["state"] == "working"
    assert midway["status"]["message"]["parts"][0]["text"].startswith("writing ")
    canceled = expect_result(cancel_task(client, task["id"]))
    assert canceled["status"]["state"] == "canceled"
    written = len(chunks(canceled))
    assert 1 <= written < 60
    # The run ended with the cancel: a later read is still canceled, with nothing more written.
    again = expect_result(get_task(client, task["id"]))
    assert again["status"]["state"] == "canceled"
    assert len(chunks(again)) == written


def test_a_follow_up_while_the_agent_works_is_refused_and_starts_no_second_run(
    client: httpx.Client,
) -> None:
    task = start(client, "slow", "first", blocking=False)
    wait_for(client, task["id"], lambda t: len(chunks(t)) >= 1)
    follow_up = {"message": message("second", task_id=task["id"])}
    answer = call(client, "message/send", follow_up).json()
    assert answer["error"]["code"] == TASK_BUSY, answer
    again = call(client, "message/send", follow_up).json()  # the same message: no key kept
    assert again["error"]["code"] == TASK_BUSY, again
    current = expect_result(get_task(client, task["id"]))
    assert [m["parts"][0]["text"] for m in current["history"] if m["role"] == "user"] == [
        "first"
    ]
    assert all(text.endswith(" first\n") for text in chunks(current))  # one run only
    expect_result(cancel_task(client, task["id"]))


def test_an_agent_asks_for_input(client: httpx.Client) -> None:
    task = start(client, "quick", "ask", blocking=True)
    assert task["status"]["state"] == "input-required"
    assert task["status"]["message"]["parts"][0]["text"] == "what should I write about?"


@pytest.mark.parametrize(
    ("entrypoint", "problem"),
    [
        ("examples.no_such_module:factory", "cannot be imported"),
        ("examples.slow_writer:no_such_factory", "names nothing callable"),
    ],
)
def test_a_broken_entrypoint_is_one_line_naming_the_agent(
    tmp_path: Path, entrypoint: str, problem: str
) -> None:
    (tmp_path / "config.yaml").write_text(
        "agents:\n"
        "  - id: broken\n"
        "    name: Broken\n"
        f"    executor: {{kind: python, entrypoint: '{entrypoint}'}}\n"
    )
    run = run_node(tmp_path)
    assert run.returncode != 0
    lines = error_lines(run.stderr)
    assert len(lines) == 1, run.stderr
    assert "'broken'" in lines[0] and entrypoint in lines[0] and problem in lines[0]
    assert "Traceback" not in run.stderr
