"""The live bench's GetTask rows (A2A 1.0): the node's against the a2a-sdk 1.3.0's, paired in
the summary and in the 3x goal; the 1.3.0 SDK's launcher when its virtualenv is missing; the
probe's check of the task answered (no servers here: tests/interop/test_bench_sdk1_row.py
probes both rows live)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.report import Row, checks, table, to_json
from bench.scenarios import SCENARIOS, SDK1, _task_asked, get_task_body, tasks_get_body
from bench.servers import ROOT, SDK1_PYTHON, ModuleLauncher, ServerError
from bench.wrk import WrkResult


def _row(name: str, server: str, kind: str, method: str, rps: float) -> Row:
    latency = {"p50": 4000.0, "p99": 8000.0, "mean": 5000.0}
    errors = {"connect": 0, "read": 0, "write": 0, "timeout": 0, "status": 0}
    result = WrkResult(int(rps), 1.0, rps, latency, errors, 0.3, "")
    return Row(name, server, kind, method, result=result, server_cpu=1.0, others_cpu=0.0)


def _rows(node_rps: float) -> list[Row]:
    return [
        _row("floor: JSON-RPC echo", "floor", "floor", "echo", 10000),
        _row("a2a-sdk: tasks/get", "a2a-sdk", "sdk", "tasks/get", 5000),
        _row("a2a-sdk 1.3.0: GetTask", "a2a-sdk 1.3.0", "sdk", "GetTask", 1000),
        _row("node: tasks/get (3 gates)", "node", "node", "tasks/get", 4000),
        _row("node: GetTask (1.0, 3 gates)", "node", "node", "GetTask", node_rps),
    ]


GOAL = "node: GetTask (1.0, 3 gates) >= 3x a2a-sdk 1.3.0 GetTask"


def test_the_rows_run_the_1_3_0_sdk_from_its_own_virtualenv() -> None:
    rows = {s.name: s for s in SCENARIOS}
    sdk1, node = rows["a2a-sdk 1.3.0: GetTask"], rows["node: GetTask (1.0, 3 gates)"]
    assert (sdk1.method, node.method) == ("GetTask", "GetTask")
    assert sdk1.launcher is SDK1 and SDK1.kind == "sdk" and SDK1.python == SDK1_PYTHON
    assert node.launcher is rows["node: tasks/get (3 gates)"].launcher  # one node process


@pytest.mark.parametrize(("node_rps", "passed"), [(3200.0, True), (2900.0, False)])
def test_the_node_getTask_is_held_to_3x_the_1_3_0_sdk(node_rps: float, passed: bool) -> None:
    found = {c.goal: c for c in checks(_rows(node_rps), {})}
    check = found[GOAL]
    assert check.passed is passed
    assert check.detail.startswith(f"{node_rps / 1000:.2f}x ({node_rps:.0f} vs 1000 req/s)")


def test_the_goal_is_skipped_when_the_sdk_row_did_not_run() -> None:
    rows = _rows(3200)
    rows[2].result, rows[2].error = None, "a2a-sdk 1.3.0 did not start"
    check = {c.goal: c for c in checks(rows, {})}[GOAL]
    assert check.passed is None and "did not run" in check.detail


def test_x_sdk_pairs_getTask_with_the_1_3_0_row_and_tasks_get_with_the_0_3() -> None:
    rows = _rows(3200)
    lines = {line[:30].strip(): line.split() for line in table(rows).splitlines()[2:]}
    assert lines["node: GetTask (1.0, 3 gates)"][-6] == "3.20"  # x sdk: 3200 / 1000
    assert lines["node: tasks/get (3 gates)"][-6] == "0.80"  # 4000 / 5000
    record = {r["name"]: r for r in to_json({}, rows, {}, [])["rows"]}
    assert record["node: GetTask (1.0, 3 gates)"]["x_sdk"] == pytest.approx(3.2)
    assert record["a2a-sdk 1.3.0: GetTask"]["x_sdk"] is None


def test_a_missing_sdk1_virtualenv_says_how_to_make_it(tmp_path: Path) -> None:
    launcher = ModuleLauncher("a2a-sdk 1.3.0", "sdk", "bench.sdk1_jsonrpc_app",
                              python=ROOT / ".no-such-venv" / "bin" / "python",
                              setup="sdk1-venv")
    with pytest.raises(ServerError, match=r"\.no-such-venv/bin/python is missing: run "
                                          r"`make sdk1-venv`"):
        launcher.start(tmp_path, [])
    assert not list(tmp_path.iterdir())  # nothing was started


def test_the_probe_knows_which_task_a_body_asks_for() -> None:
    assert _task_asked(get_task_body("t-1")) == "t-1"
    assert _task_asked(tasks_get_body("t-2")) == "t-2"
    assert _task_asked(json.dumps({"method": "SendMessage", "params": {"id": "x"}}).encode()) \
        is None
    assert _task_asked(b"") is None and _task_asked(b"not json") is None
