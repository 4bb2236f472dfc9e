"""`kind: python` agents load under `synthorg-a2a serve` as an operator expects: modules are
found in `python_path`, the data dir and the working directory; `config check` loads each
entrypoint and names the agent whose entrypoint does not load.

The command runs as installed (the console script, or `python -P` where there is none): unlike
`python -m`, neither puts the working directory on the import path by itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support.node import ROOT, NodeProcess

SCRIPT = Path(sys.executable).with_name("synthorg-a2a")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-P", "-m", "synthorg.cli.main"]

README_WRITER = """\
a2a:
  enabled: true
agents:
  - id: writer
    name: Slow writer
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {seconds: 3, chunks: 6}
"""

AGENT_MODULE = textwrap.dedent('''\
    from synthorg.tasks.executors import EchoExecutor

    def factory(options):
        return EchoExecutor()
''')


def _config(module: str, python_path: list[str] | None = None) -> str:
    lines = [f"python_path: {python_path}"] if python_path is not None else []
    lines += [
        "a2a:",
        "  enabled: true",
        "agents:",
        "  - id: helper",
        "    name: Helper",
        "    executor:",
        "      kind: python",
        f"      entrypoint: {module}:factory",
    ]
    return "\n".join(lines) + "\n"


def _serve(data_dir: Path, cwd: Path) -> NodeProcess:
    return NodeProcess(data_dir, argv=[*COMMAND, "serve"], cwd=cwd)


def _agent_card(node: NodeProcess, agent: str) -> int:
    with node.client() as client:
        return client.get(f"/.well-known/agents/{agent}/agent-card.json").status_code


def _check(data_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SYNTHORG_DATA_DIR": str(data_dir)}
    return subprocess.run([*COMMAND, "config", "check", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def test_the_readme_example_agent_serves_from_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(README_WRITER)
    with _serve(tmp_path, ROOT) as node:
        assert _agent_card(node, "writer") == 200


def test_a_module_in_the_data_dir_loads_from_anywhere(tmp_path: Path) -> None:
    data_dir, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    data_dir.mkdir()
    elsewhere.mkdir()
    (data_dir / "data_dir_agent.py").write_text(AGENT_MODULE)
    (data_dir / "config.yaml").write_text(_config("data_dir_agent"))
    with _serve(data_dir, elsewhere) as node:
        assert _agent_card(node, "helper") == 200


def test_python_path_entries_are_searched_relative_to_the_config(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    (tmp_path / "plugins" / "acme_agents").mkdir(parents=True)
    (tmp_path / "plugins" / "acme_agents" / "__init__.py").write_text("")
    (tmp_path / "plugins" / "acme_agents" / "helper.py").write_text(AGENT_MODULE)
    data_dir.mkdir()
    (data_dir / "config.yaml").write_text(_config("acme_agents.helper", ["../plugins"]))
    assert _check(data_dir, tmp_path).returncode == 0
    with _serve(data_dir, data_dir) as node:
        assert _agent_card(node, "helper") == 200


def test_config_check_loads_the_readme_example_from_the_repository_root(
    tmp_path: Path,
) -> None:
    (tmp_path / "config.yaml").write_text(README_WRITER)
    done = _check(tmp_path, ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(": ok")


def test_config_check_names_the_agent_whose_entrypoint_does_not_load(tmp_path: Path) -> None:
    (tmp_path / "broken_agent.py").write_text("def factory(options):\n    return object()\n")
    (tmp_path / "config.yaml").write_text(
        _config("no_such_module")
        + "  - id: other\n    name: Other\n"
        + "    executor: {kind: python, entrypoint: 'broken_agent:factory'}\n"
    )
    done = _check(tmp_path, tmp_path)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert any(
        ":8: agents[0].executor.entrypoint: agent 'helper'" in line
        and "No module named 'no_such_module'" in line for line in lines
    ), lines
    assert any(
        "agents[1].executor.entrypoint: agent 'other'" in line and "returned no executor" in line
        for line in lines
    ), lines
    assert lines[-1].startswith("2 problem(s)")


def test_serve_names_the_agent_whose_entrypoint_does_not_load(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(_config("no_such_module"))
    done = subprocess.run([*COMMAND, "serve", "--port", "0"], cwd=tmp_path,
                          env={**os.environ, "SYNTHORG_DATA_DIR": str(tmp_path)},
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "error:" in done.stderr and "agent 'helper'" in done.stderr
    assert "No module named 'no_such_module'" in done.stderr
