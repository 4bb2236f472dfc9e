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
