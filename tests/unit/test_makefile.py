"""`make demo` and `make test` set up .venv quietly: pip's progress is not the demo's output."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target", ["demo", "test"])
def test_the_venv_is_installed_quietly(target: str, tmp_path: Path) -> None:
    # -n prints the recipes without running them; -B makes every target out of date, and
    # VENV points at a directory that does not exist, so the venv's recipe is printed too.
    done = subprocess.run(["make", "-n", "-B", f"VENV={tmp_path / 'venv'}", target], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)
    installs = [line for line in done.stdout.splitlines() if "pip install" in line]
    assert installs, done.stdout
    assert all(" -q " in f"{line} " for line in installs), installs


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_live_bench_builds_the_sdk1_venv_it_runs(tmp_path: Path) -> None:
    # Its a2a-sdk 1.3.0 row runs in .venv-sdk1, served like the others: uvloop and httptools.
    done = subprocess.run(["make", "-n", "-B", f"VENV={tmp_path / 'venv'}",
                           f"SDK1_VENV={tmp_path / 'sdk1'}", "bench"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)
    sdk1 = [line for line in done.stdout.splitlines()
            if "pip install" in line and "a2a-sdk[" in line]
    assert len(sdk1) == 1, done.stdout
    assert all(f"'{package}==" in sdk1[0] for package in ("uvicorn", "uvloop", "httptools"))
