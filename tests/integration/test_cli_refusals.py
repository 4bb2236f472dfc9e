"""What the command line refuses, and how it says so: one `error:` line that names the
setting, the range allowed and the value given, and a non-zero exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.node import ROOT


def _run(*argv: str, env: dict[str, str] | None = None, cwd: Path = ROOT
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], cwd=cwd, env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("command", [("synthorg.cli.main", "serve"), ("synthorg.api",)],
                         ids=["synthorg-a2a serve", "python -m synthorg.api"])
def test_an_invalid_log_level_is_refused(tmp_path: Path, command: tuple[str, ...]) -> None:
    done = _run(*command, env={"SYNTHORG_LOG_LEVEL": "loud", "SYNTHORG_DATA_DIR": str(tmp_path),
                               "SYNTHORG_BACKEND_PORT": "0"})
    assert done.returncode == 2
    assert done.stderr == ("error: SYNTHORG_LOG_LEVEL: 'loud' is not a log level "
                           "(debug, info, warning, error, critical)\n")
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


@pytest.mark.parametrize(("command", "prog"), [
    (("synthorg.cli.main", "serve"), "synthorg-a2a serve"),
    (("synthorg.api",), "python -m synthorg.api"),
], ids=["synthorg-a2a serve", "python -m synthorg.api"])
def test_a_worker_count_out_of_range_is_refused_by_either_command(
    tmp_path: Path, command: tuple[str, ...], prog: str
) -> None:
    done = _run(*command, "--workers", "0", env={"SYNTHORG_DATA_DIR": str(tmp_path)})
    assert done.returncode == 2
    assert done.stderr == (f"error: argument --workers: '0' is not a worker count (1-64) "
                           f"(see '{prog} --help')\n")
    assert list(tmp_path.iterdir()) == []
