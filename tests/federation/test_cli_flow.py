"""An operator's delegation from the terminal, between two real nodes: what `delegate` and
`tasks get|follow|cancel|list` say while a task runs at the peer and after it ended there.

    node-a  allows node-b   (the operator's node: the CLI runs on its data dir)
    node-b  allows node-a   agents: writer (the example slow writer: progress messages and
                            artifact chunks, about a second), steady (the same, 16 s),
                            slowpoke (a minute), echo, parker
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.federation.harness import WRITER, FedNode, Pair

B_AGENTS = (  # node-b's, in the `nodes` fixture (conftest.py)
    "agents:\n"
    + WRITER.format(id="writer", seconds=0.9, chunks=3)
    + WRITER.format(id="steady", seconds=16, chunks=4)
    + WRITER.format(id="slowpoke", seconds=60, chunks=60)
    + "  - {id: echo, name: echo, executor: {kind: echo}}\n"
    + "  - {id: parker, name: parker, executor: {kind: park}}\n"
)
EXIT_OK, EXIT_NOT_FOUND, EXIT_USAGE = 0, 1, 2


def delegated(a: FedNode, *args: str) -> dict[str, Any]:
    result = a.cli("delegate", "node-b", *args, "--json")
    assert result.returncode == 0, result.stderr
    record: dict[str, Any] = json.loads(result.stdout)
    return record


def test_delegate_without_wait_returns_at_once_with_the_ids(
    nodes: Pair,
) -> None:
    a, _ = nodes
    # The writer needs about a second: a send that waited for it would come back completed.
    shown = a.cli("delegate", "node-b", "no wait", "--agent", "writer")
    assert shown.returncode == 0, shown.stderr
    local = re.search(r"local id\s+(\S+)", shown.stdout)
    remote = re.search(r"remote task\s+(\S+)", shown.stdout)
    assert local and remote, shown.stdout
    state = re.search(r"state\s+(\S+)", shown.stdout)
    assert state and state.group(1) in ("submitted", "working"), shown.stdout
    assert f"synthorg-a2a tasks follow {local.group(1)}" in shown.stdout


def test_follow_a_task_that_already_ended_at_the_peer_reports_its_final_state(
    nodes: Pair,
) -> None:
    a, b = nodes
    record = delegated(a, "ended there", "--agent", "slowpoke")
    assert record["state"] in ("submitted", "working")
    # B's operator cancels it there; A's record still says it runs.
    canceled = b.cli("tasks", "cancel", record["remote_task_id"])
    assert canceled.returncode == 0, canceled.stderr
    assert a.cli_json("tasks", "get", record["id"])["state"] == record["state"]

    shown = a.cli("tasks", "follow", record["id"], "--timeout", "60")
    assert "could not reach" not in shown.stdout + shown.stderr
    assert shown.returncode == 4, shown.stdout + shown.stderr  # it ended canceled
    assert re.search(r"state\s+canceled", shown.stdout), shown.stdout
    assert a.cli_json("tasks", "get", record["id"])["state"] == "canceled"


def progress_lines(output: str) -> list[str]:
    """The lines printed while following (`  [  1.2s] ...`), without their time stamps."""
    return [re.sub(r"^\s*\[\s*[0-9.]+s\] ", "", line)
            for line in output.splitlines() if re.match(r"^\s*\[\s*[0-9.]+s\] ", line)]


def test_delegate_wait_shows_progress_messages_and_chunks_as_they_arrive(
    nodes: Pair,
) -> None:
    a, _ = nodes
    shown = a.cli("delegate", "node-b", "live", "--agent", "writer", "--wait")
    assert shown.returncode == 0, shown.stderr
    lines = progress_lines(shown.stdout)
    for step in (1, 2, 3):
        assert f"working: writing {step}/3" in lines, shown.stdout
        assert f"artifact answer: [{step}] live" in lines, shown.stdout
    # Each in its order, the chunk after the message that announced it, before the end.
    order = [lines.index(f"working: writing {n}/3") for n in (1, 2, 3)]
    chunks = [lines.index(f"artifact answer: [{n}] live") for n in (1, 2, 3)]
    assert order == sorted(order) and chunks == sorted(chunks)
    assert all(o < c for o, c in zip(order, chunks, strict=True))
    assert lines[-1] == "completed: done"
    assert "could not reach" not in shown.stdout


def test_tasks_follow_shows_the_rest_of_a_running_task(nodes: Pair) -> None:
    a, _ = nodes
    record = delegated(a, "later", "--agent", "steady")
    shown = a.cli("tasks", "follow", record["id"], "--timeout", "120")
    assert shown.returncode == 0, shown.stderr
    lines = progress_lines(shown.stdout)
    # Started well before the steady writer's last chunk: that one arrives while followed.
    assert "working: writing 4/4" in lines and "artifact answer: [4] later" in lines, (
        shown.stdout)
    assert lines[-1] == "completed: done"


def test_tasks_list_says_outbound_states_are_last_known_and_refresh_asks(
    nodes: Pair,
) -> None:
    a, b = nodes
    record = delegated(a, "stale", "--agent", "slowpoke")
    assert b.cli("tasks", "cancel", record["remote_task_id"]).returncode == 0
    plain = a.cli("tasks", "list", "--outbound")
    assert "last known" in plain.stdout and "--refresh" in plain.stdout
    row = next(line for line in plain.stdout.splitlines() if line.startswith(record["id"]))
    assert record["state"] in row.split()  # what A last heard
    fresh = a.cli("tasks", "list", "--outbound", "--refresh")
    assert fresh.returncode == 0, fresh.stderr
    row = next(line for line in fresh.stdout.splitlines() if line.startswith(record["id"]))
    assert "canceled" in row.split()
    as_json = a.cli_json("tasks", "list", "--outbound", "--refresh")["outbound"]
    assert next(r for r in as_json if r["id"] == record["id"])["state"] == "canceled"


def test_task_ids_may_be_given_by_their_start(nodes: Pair) -> None:
    a, b = nodes
    record = delegated(a, "prefix", "--agent", "echo", "--wait")
    got = a.cli_json("tasks", "get", record["id"][:8])
    assert got["id"] == record["id"]
    # On B, the inbound task by the start of its id.
    inbound = b.cli_json("tasks", "get", record["remote_task_id"][:8])
    assert inbound["task"]["id"] == record["remote_task_id"]
    followed = a.cli("tasks", "follow", record["id"][:8], "--json")
    assert followed.returncode == 0 and json.loads(followed.stdout)["id"] == record["id"]
    # Too short to stand for an id, or matching none: not found.
    assert a.cli("tasks", "get", record["id"][:3]).returncode == EXIT_NOT_FOUND
    assert a.cli("tasks", "get", "zzzz-none").returncode == EXIT_NOT_FOUND
