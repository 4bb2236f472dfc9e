"""`peers list` shows each peer's reachability and skill count from its card."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.node import NodeProcess, cli

CONFIG = """\
a2a:
  enabled: true
agents:
  - id: writer
    name: Writer
    skills:
      - {id: write, name: Write}
      - {id: edit, name: Edit}
"""


def test_peers_list_probes_cards(tmp_path: Path) -> None:
    with NodeProcess(tmp_path / "b", CONFIG) as node_b:
        home = tmp_path / "a"
        cli(home, "peers", "add", "node-b", "--endpoint", node_b.url,
            stdin="probe-link-secret-6d2a")
        cli(home, "peers", "add", "node-down", "--endpoint", "http://127.0.0.1:9",
            stdin="probe-down-secret-1f7c")
        table = cli(home, "peers", "list").stdout
        listed = json.loads(cli(home, "peers", "list", "--json").stdout)
    rows = {line.split()[0]: line for line in table.splitlines()[1:]}
    assert rows["node-b"].endswith("ok, 2 skills, unverified")
    assert rows["node-down"].endswith("unreachable: connect_error")
    cards = {entry["name"]: entry["card"] for entry in listed}
    assert cards["node-b"]["status"] == "ok" and cards["node-b"]["skills"] == 2
    assert cards["node-down"] == {
        **cards["node-down"],
        "status": "unreachable",
        "reason": "connect_error",
    }
    assert "link-secret" not in table + json.dumps(listed)
