"""The README's a2a-sdk snippet, run as written against a live node: an SDK client that sends
both peer headers is admitted and gets its answer."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.node import ROOT, NodeProcess, cli

PEER, SECRET = "sdk-reader", "readme-sdk-link-secret-41c9a7e2"
CONFIG = f"a2a:\n  enabled: true\n  allowed_peers: [{PEER}]\n"


def readme_snippet() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Calling this node from the a2a-sdk\n", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return block


def test_the_readme_snippet_calls_a_live_node(tmp_path: Path) -> None:
    script = tmp_path / "snippet.py"
    script.write_text(readme_snippet())
    with NodeProcess(tmp_path / "node", CONFIG) as node:
        cli(node.data_dir, "peers", "add", PEER, "--endpoint", "http://127.0.0.1:9", stdin=SECRET)
        env = {**os.environ, "NODE_URL": node.url, "PEER_NAME": PEER, "PEER_SECRET": SECRET}
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                              text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "completed hello from the a2a-sdk\n"
