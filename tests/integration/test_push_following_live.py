"""Onward delegation followed by push: node A, with `public_url` set, forwards to node B's
slow agent and asks B to push B's task to A's receiver; B's signed pushes update A's
delegation record and A's task ends with B's."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx

from synthorg.push.signing import push_credential
from tests.integration.helpers import call, expect_result, get_task, message
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

CALLER, CALLER_KEY = "peer-caller", "key-caller-2c4e6a8b1d3f"
LINK = "link-a-b-7d1f3b5c9e2a"
DEADLINE = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_forwarded_task_is_followed_by_push_when_public_url_is_set(tmp_path: Path) -> None:
    b_config = """\
a2a:
  enabled: true
  node_name: node-b
  allowed_peers: [node-a]
agents:
  - id: slow
    name: Slow writer
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {seconds: 1.5, chunks: 3}
"""
    port = free_port()
    a_url = f"http://127.0.0.1:{port}"
    with LiveNode(tmp_path / "b", b_config) as b:
        add_peer(tmp_path / "b", "node-a", LINK, endpoint=a_url)
        add_peer(tmp_path / "a", "node-b", LINK, endpoint=b.url)
        add_peer(tmp_path / "a", CALLER, CALLER_KEY)
        a_config = f"""\
a2a:
  enabled: true
  node_name: node-a
  public_url: {a_url}
  allowed_peers: [{CALLER}]
agents:
  - {{id: fwd, name: Forwarder, executor: {{kind: peer, peer: node-b, agent: slow}}}}
"""
        a = LiveNode(tmp_path / "a", a_config, env={"SYNTHORG_BACKEND_PORT": str(port)})
        with a, a.client(CALLER, CALLER_KEY) as client:
            params = {"message": message("hi", agent_id="fwd"),
                      "configuration": {"blocking": False}}
            task = expect_result(call(client, "message/send", params))
            received = a.wait_for_event("a2a.push.received", timeout=DEADLINE,
                                        peer_name="node-b", state="completed")
            assert received["delegation_id"] is not None
            a.wait_for_event("a2a.task.state_changed", timeout=DEADLINE, task_id=task["id"],
                             state="completed")
            done = expect_result(get_task(client, task["id"]))
            assert done["status"]["state"] == "completed"
            assert len(done["artifacts"][0]["parts"]) == 3  # every chunk relayed
            # A registered A2A's own push credential with B, for B's task only: B's pushes
            # carry it as Authorization beside their signature, and it alone is enough at A's
            # receiver (a pusher that does not sign).
            remote = received["task_id"]
            credential = push_credential(LINK, "node-b", remote)
            with b.client("node-a", LINK) as as_a:
                config = expect_result(call(as_a, "tasks/pushNotificationConfig/get", {
                    "id": remote, "pushNotificationConfigId": "synthorg-follow"}))
            assert config["pushNotificationConfig"]["authentication"] == {
                "schemes": ["Bearer"], "credentials": credential}
            assert config["pushNotificationConfig"]["token"] == credential
            body = json.dumps({**done, "id": remote}).encode()
            pushed = httpx.post(f"{a_url}/api/v1/webhooks/node-b/a2a_push", content=body,
                                headers={"Authorization": f"Bearer {credential}"}, timeout=10)
            assert pushed.status_code == 204, pushed.text
        b.wait_for_event("a2a.push.delivered", delivery_id=received["delivery_id"])
        # B's card offers A2A 1.0, so A asked for the pushes in 1.0's own method
        b.wait_for_event("a2a.inbound.completed", method="CreateTaskPushNotificationConfig",
                         status=200)
