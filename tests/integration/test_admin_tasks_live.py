"""The admin API's task operations against a live node: the list with its filters and pages,
a task whole, a cancel by the peer's own rules, and a task followed live over SSE."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from synthorg.admin.token import TOKEN_ENV
from synthorg.generated.models import AdminTaskDetail, AdminTaskList, AuditList
from tests.integration.helpers import (
    cancel_task,
    create_task,
    expect_result,
    message,
    park_task,
    send,
)
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

TOKEN = "tasks-admin-token-LEAKCHECK-0d4e"
CALLER, CALLER_KEY = "caller", "caller-key-LEAKCHECK-61aa"
OTHER, OTHER_KEY = "other", "other-key-LEAKCHECK-8c2f"
CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{CALLER}, {OTHER}]
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
  - {{id: parker, name: Parker, executor: {{kind: park}}}}
"""
TASKS = "/api/v1/admin/tasks"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir = tmp_path_factory.mktemp("admin-tasks")
    add_peer(data_dir, CALLER, CALLER_KEY, endpoint="http://127.0.0.1:9")
    add_peer(data_dir, OTHER, OTHER_KEY, endpoint="http://127.0.0.1:9")
    with LiveNode(data_dir, CONFIG, env={TOKEN_ENV: TOKEN}) as live:
        yield live


@pytest.fixture(scope="module")
def admin(node: LiveNode) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=node.url, timeout=30.0,
                      headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


def peer(node: LiveNode, name: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=node.url, timeout=30.0,
                        headers={"X-A2A-Peer-Name": name, "X-API-Key": key})


def test_the_list_filters_by_peer_agent_and_state_and_pages(node: LiveNode,
                                                            admin: httpx.Client) -> None:
    with peer(node, CALLER, CALLER_KEY) as caller, peer(node, OTHER, OTHER_KEY) as other:
        echoed = [create_task(caller, f"echo {i}", agent_id="echo")["id"] for i in range(3)]
        parked = park_task(other)["id"]
    everything = AdminTaskList.model_validate(admin.get(TASKS).json())
    ids = [t.id for t in everything.tasks]
    assert set(echoed) | {parked} <= set(ids) and everything.delegations == []
    only_other = admin.get(TASKS, params={"peer": OTHER}).json()["tasks"]
    assert [t["id"] for t in only_other] == [parked] and only_other[0]["agent"] == "parker"
    waiting = admin.get(TASKS, params={"state": "input-required", "agent": "parker"}).json()
    assert [t["id"] for t in waiting["tasks"]] == [parked]
    first = admin.get(TASKS, params={"peer": CALLER, "pageSize": 2}).json()
    second = admin.get(TASKS, params={"peer": CALLER, "pageSize": 2,
                                      "pageToken": first["nextPageToken"]}).json()
    assert first["nextPageToken"] and second["nextPageToken"] == ""
    assert {t["id"] for t in first["tasks"] + second["tasks"]} == set(echoed)
    later = admin.get(TASKS, params={"since": "2999-01-01T00:00:00Z"}).json()
    assert later["tasks"] == []
    outbound = admin.get(TASKS, params={"direction": "outbound"}).json()
    assert outbound["direction"] == "outbound" and outbound["tasks"] == []


@pytest.mark.parametrize(("params", "key"), [
    ({"state": "sleeping"}, "state"), ({"direction": "sideways"}, "direction"),
    ({"pageSize": "0"}, "pageSize"), ({"pageSize": "101"}, "pageSize"),
    ({"pageToken": "x"}, "pageToken"), ({"since": "yesterday"}, "since"),
    ({"peer": "Not A Name"}, "peer"), ({"state": ["working", "failed"]}, "state"),
])
def test_a_bad_filter_is_400_naming_it(admin: httpx.Client, params: dict[str, object],
                                       key: str) -> None:
    refused = admin.get(TASKS, params=params)  # type: ignore[arg-type]
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "invalid_value" and refused.json()["key"] == key


def test_a_task_whole_and_its_cancel_by_the_peers_rules(node: LiveNode,
                                                        admin: httpx.Client) -> None:
    with peer(node, CALLER, CALLER_KEY) as caller:
        parked = park_task(caller)["id"]
        detail = AdminTaskDetail.model_validate(admin.get(f"{TASKS}/{parked}").json())
        assert detail.peer == CALLER and detail.cancelable and detail.onward is None
        assert detail.task.history and detail.task.history[0].parts[0].text == "park me"  # type: ignore[union-attr]
        assert admin.get(f"{TASKS}/{parked}", params={"peer": OTHER}).status_code == 404
        canceled = admin.post(f"{TASKS}/{parked}/cancel")
        assert canceled.status_code == 200 and canceled.json()["status"]["state"] == "canceled"
        seen = expect_result(caller.post("/api/v1/a2a/", json={
            "jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": parked}}))
        assert seen["status"]["state"] == "canceled"
        again = admin.post(f"{TASKS}/{parked}/cancel")
        assert again.status_code == 409 and again.json()["error"] == "task_not_cancelable"
    missing = admin.get(f"{TASKS}/no-such-task")
    assert missing.status_code == 404 and missing.json()["error"] == "unknown_task"
    assert admin.post(f"{TASKS}/no-such-task/cancel").status_code == 404
    assert httpx.get(node.url + f"{TASKS}/{parked}").status_code == 401


def test_a_task_followed_live_goes_past_each_wait_to_its_final_event(
        node: LiveNode, admin: httpx.Client) -> None:
    with peer(node, CALLER, CALLER_KEY) as caller:
        parked = park_task(caller)["id"]
        with admin.stream("GET", f"{TASKS}/{parked}/events") as events:
            assert events.headers["content-type"].startswith("text/event-stream")
            lines = events.iter_lines()
            first = next(line for line in lines if line.startswith("data:"))
            assert '"input-required"' in first
            answered = expect_result(send(caller, message("more", task_id=parked)))
            assert answered["status"]["state"] == "input-required"  # waits again
            expect_result(cancel_task(caller, parked))
            rest = [line for line in lines if line]
        sent = [json.loads(line.removeprefix("data: ")) for line in rest
                if line.startswith("data: ")]
        states = [event["status"]["state"] for event in sent
                  if event.get("kind") == "status-update"]
        assert states == ["input-required", "canceled"], rest
        assert rest[-2:] == ["event: end", "data: {}"]
        # Past the wait for input the stream waits for the next event: it never sends the
        # waiting task again (each id once, rising), which would spin the node's loop.
        ids = [int(line.removeprefix("id: ")) for line in rest if line.startswith("id: ")]
        assert ids == sorted(set(ids)), ids
    assert admin.get(f"{TASKS}/nope/events").status_code == 404


def test_the_audit_trail_is_listed_newest_first_with_filters(admin: httpx.Client) -> None:
    for value in (4, 5):
        assert admin.put("/api/v1/admin/settings/a2a.max_message_parts",
                         json={"value": value}).status_code == 200
    trail = AuditList.model_validate(admin.get("/api/v1/admin/audit").json()).records
    changed = [r for r in trail if r.event == "admin.setting.changed"]
    assert [r.fields["new"] for r in changed[:2]] == [5, 4]
    assert all(r.via == "admin_api" for r in changed)
    by_key = admin.get("/api/v1/admin/audit", params={
        "key": "a2a.max_message_parts", "limit": 1}).json()["records"]
    assert len(by_key) == 1 and by_key[0]["fields"]["new"] == 5
    assert admin.get("/api/v1/admin/audit", params={"via": "cli"}).json()["records"] == []
    for params in ({"event": "admin.nothing"}, {"limit": "0"}, {"since": "soon"}):
        refused = admin.get("/api/v1/admin/audit", params=params)
        assert refused.status_code == 400 and refused.json()["error"] == "invalid_value"
