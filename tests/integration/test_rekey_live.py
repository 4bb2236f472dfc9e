"""`peers rekey` while a node runs on the old key alone: the CLI warns, and the node's gate
says in its log why it now refuses the peer (the record cannot be decrypted with its keys)."""

from __future__ import annotations

from pathlib import Path

import httpx
from cryptography.fernet import Fernet

from tests.integration.helpers import message, send
from tests.integration.live import LiveNode
from tests.support.node import cli

PEER, SECRET = "peer-a", "rekey-live-link-secret-7d21c0"
CONFIG = f"a2a:\n  enabled: true\n  allowed_peers: [{PEER}]\n"


def test_rekey_under_a_node_on_the_old_key_warns_and_the_gate_says_why(tmp_path: Path) -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    cli(tmp_path, "peers", "add", PEER, "--endpoint", "http://127.0.0.1:9", stdin=SECRET,
        env={"SYNTHORG_SECRET_KEY": old})
    node = LiveNode(tmp_path, CONFIG, env={"SYNTHORG_SECRET_KEY": old})
    with node, httpx.Client(base_url=node.url, timeout=30,
                            headers={"X-A2A-Peer-Name": PEER, "X-API-Key": SECRET}) as peer:
        assert send(peer, message("before")).status_code == 200  # serving: its lease is held

        rekeyed = cli(tmp_path, "peers", "rekey", env={"SYNTHORG_SECRET_KEY": f"{new},{old}"})
        assert rekeyed.stdout.startswith("re-encrypted 1 peer record")
        assert rekeyed.stderr.startswith("warning: 1 node process serving this store now")
        assert "restart each with the newest key first in SYNTHORG_SECRET_KEY" in rekeyed.stderr

        assert send(peer, message("after")).status_code == 401
        event = node.wait_for_event("a2a.inbound.auth_failed", reason="record_undecryptable")
        assert event["peer_name"] == PEER
        assert "cannot be decrypted with this node's keys" in event["detail"]
        assert SECRET not in str(node.lines)


def test_no_warning_without_a_running_node_or_a_second_key(tmp_path: Path) -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    cli(tmp_path, "peers", "add", PEER, "--endpoint", "http://127.0.0.1:9", stdin=SECRET,
        env={"SYNTHORG_SECRET_KEY": old})
    for keys in (f"{new},{old}", new):
        rekeyed = cli(tmp_path, "peers", "rekey", env={"SYNTHORG_SECRET_KEY": keys})
        assert rekeyed.stderr == ""
