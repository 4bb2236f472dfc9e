"""The in-process profile (bench/inprocess_profile.py): its child calls a real node's ASGI app
for a row and reports the calls made and each thread's CPU; the parent lines the threads of
different children up by role before py-spy's samples are charged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import inprocess_profile as profile
from bench import stack_rules

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("row", profile.ROWS)
def test_the_child_calls_its_row_and_reports_calls_and_cpu(row: str) -> None:
    # The child asserts every warm-up call answered the row's status (200, or 401 for the
    # wrong key) before it measures.
    done = subprocess.run(
        [sys.executable, "-m", "bench.inprocess_profile", "--child", row, "--warmup", "0.05",
         "--duration", "0.2"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0] == profile.MEASURING
    found = json.loads(lines[-1])
    assert found["calls"] > 0
    assert str(found["loop"]) in found["cpu"]
    per_call = profile.by_role(found)
    assert per_call[0] > 0  # the loop's thread did the work


def test_threads_are_renumbered_by_role() -> None:
    found = {"calls": 10, "loop": 700, "cpu": {"700": 0.001, "705": 0.0002, "702": 0.0001}}
    assert profile.roles_of(found) == {700: 0, 702: 1, 705: 2}
    assert profile.by_role(found) == pytest.approx({0: 100.0, 1: 10.0, 2: 20.0})
    line = ("thread (705): synthorg-events;Thread._bootstrap (threading.py:1002);"
            "LineWriter._run (synthorg/observability/writer.py:98) 3")
    stack = stack_rules.parse_line(profile.renumbered(line, profile.roles_of(found)))
    assert stack is not None and stack.thread == 2 and stack.count == 3


@pytest.mark.parametrize("inner", [
    "call (bench/inprocess_profile.py:60)",
    "call (bench/pipeline.py:90);call.<locals>.send (bench/pipeline.py:80)",
])
def test_the_drivers_frames_are_the_servers_part(inner: str) -> None:
    line = ("thread (1): MainThread;_run_module_as_main (<frozen runpy>:198);"
            f"drive (bench/inprocess_profile.py:118);{inner} 4")
    stack = stack_rules.parse_line(line)
    assert stack is not None
    assert stack_rules.decide(stack.frames)[0] == stack_rules.SERVER


def test_the_gateway_under_the_driver_is_charged_to_the_node() -> None:
    line = ("thread (1): MainThread;drive (bench/inprocess_profile.py:118);"
            "call (bench/pipeline.py:90);Gateway._admit (synthorg/gateway/endpoint.py:236) 2")
    stack = stack_rules.parse_line(line)
    assert stack is not None
    assert stack_rules.decide(stack.frames)[0] == stack_rules.GLUE
