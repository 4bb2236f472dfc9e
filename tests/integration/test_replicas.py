"""Two replicas of one node on one PostgreSQL database, as the README sets them up, driven at
once through both.

Each replica is a node process of its own (own data dir, own port) with the same config, the
same SYNTHORG_SECRET_KEY and SYNTHORG_ADMIN_TOKEN, and SYNTHORG_DATABASE_URL naming a
throwaway database. Every rule must hold across them as it holds inside one node: ownership,
one task per `(peer, messageId)`, serialised follow-ups and cancels, changes to settings and
peers applied on the other replica from its next request, one audit trail, a killed replica
whose acknowledged work survives and whose unfinished tasks the other fails once its lease
runs out, and never before.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import httpx
import pytest
from cryptography.fernet import Fernet

from synthorg.store.postgres.listener import APPLICATION_NAME as LISTENER_NAME
from tests.integration.conftest import AGENTS_YAML, KEY_A, KEY_B, PEER_A, PEER_B, api_key_headers
from tests.integration.helpers import (
    INVALID_PARAMS,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    TASK_TERMINAL,
    UNAUTHENTICATED,
    Json,
    call,
    envelope,
    expect_error,
    expect_result,
    get_task,
    message,
    park_task,
    send,
    unique,
)
from tests.integration.live import LiveNode
from tests.support.node import cli
from tests.support.scripted_server import Answer, ScriptedServer

T = TypeVar("T")
LEASE = "2"  # seconds: a killed replica's tasks are failed this long after its last heartbeat
ADMIN_TOKEN = "replica-admin-token-7d1e5c9a3b"
DOWNSTREAM = "downstream"
WRITER_SECONDS, WRITER_CHUNKS = 3, 6  # the slow writer: one chunk of its answer every 0.5 s
CONFIG = f"""\
a2a:
  enabled: true
  node_name: replicated-node
  allowed_peers: [{PEER_A}, {PEER_B}]
{AGENTS_YAML}  - {{id: slow, name: Slow, executor: {{kind: peer, peer: {DOWNSTREAM}}}}}
  - id: writer
    name: Writer
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {{seconds: {WRITER_SECONDS}, chunks: {WRITER_CHUNKS}}}
"""


class Replicas:
    """The shared environment of every replica (and of the CLI acting on their database)."""

    def __init__(self, root: Path, url: str) -> None:
        self.root = root
        self.env = {
            "SYNTHORG_DATABASE_URL": url,
            "SYNTHORG_SECRET_KEY": Fernet.generate_key().decode(),
            "SYNTHORG_ADMIN_TOKEN": ADMIN_TOKEN,
            "SYNTHORG_RUNNER_LEASE_SECONDS": LEASE,
            "SYNTHORG_DATABASE_CONNECT_TIMEOUT": "2",
            "SYNTHORG_DATABASE_STATEMENT_TIMEOUT": "2",
        }
        self.count = 0

    def replica(self, name: str | None = None, **env: str) -> LiveNode:
        self.count += 1
        data_dir = self.root / (name or f"replica-{self.count}")
        return LiveNode(data_dir, CONFIG, env={**self.env, **env})

    def cli(self, *args: str, stdin: str | None = None,
            check: bool = True) -> Any:
        return cli(self.root / "cli", *args, stdin=stdin, env=self.env, check=check)

    def add_peer(self, name: str, key: str, endpoint: str = "http://127.0.0.1:9") -> None:
        self.cli("peers", "add", name, "--endpoint", endpoint, stdin=key)


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory, postgres_url: str) -> Replicas:
    shared = Replicas(tmp_path_factory.mktemp("replicas"), postgres_url)
    shared.add_peer(PEER_A, KEY_A)
    shared.add_peer(PEER_B, KEY_B)
    return shared


@pytest.fixture(scope="module")
def pair(replicas: Replicas) -> Iterator[tuple[LiveNode, LiveNode]]:
    with replicas.replica() as first, replicas.replica() as second:
        yield first, second


def client(node: LiveNode, peer: str = PEER_A, key: str = KEY_A) -> httpx.Client:
    return httpx.Client(base_url=node.url, headers=api_key_headers(peer, key), timeout=30.0)


def admin(node: LiveNode) -> httpx.Client:
    return httpx.Client(base_url=f"{node.url}/api/v1/admin", timeout=30.0,
                        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})


@pytest.fixture(scope="module")
def clients(pair: tuple[LiveNode, LiveNode]) -> Iterator[list[httpx.Client]]:
    """Twelve kept-alive connections, alternating between the two replicas."""
    with ExitStack() as stack:
        yield [stack.enter_context(client(pair[i % 2])) for i in range(12)]


def wait_until_final(c: httpx.Client, task_id: str, timeout: float) -> Json:
    """The task once it is no longer submitted or working; fails after `timeout` s. Polled
    (the condition lives in another process's database), never slept on blindly."""
    deadline = time.monotonic() + timeout
    tick = threading.Event()
    while True:
        task = expect_result(get_task(c, task_id))
        if task["status"]["state"] not in ("submitted", "working"):
            return task
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} still {task['status']['state']} after {timeout}s")
        tick.wait(0.1)


def first_refusal(
    attempt: Callable[[], httpx.Response], refused: Callable[[httpx.Response], bool],
    timeout: float = 5.0,
) -> httpx.Response:
    """A change written through one replica reaches the others by notification: sent at the
    writer's commit, so before its answer, but read by the other replica's loop in its own
    turn. The other replica's request is repeated until one is refused; fails after
    `timeout` s (the listener's heartbeat alone would see the change within about 1 s)."""
    deadline = time.monotonic() + timeout
    while True:
        response = attempt()
        if refused(response):
            return response
        if time.monotonic() > deadline:
            raise AssertionError(f"not refused after {timeout}s: {response.status_code}")


def is_error(response: httpx.Response) -> bool:
    return "error" in response.json()


def is_unauthorized(response: httpx.Response) -> bool:
    return response.status_code == 401


def race(clients: list[httpx.Client], work: Callable[[int, httpx.Client], T]) -> list[T]:
    with ThreadPoolExecutor(len(clients)) as executor:
        return list(executor.map(work, range(len(clients)), clients))


def test_both_replicas_are_live_and_ready(pair: tuple[LiveNode, LiveNode]) -> None:
    for node in pair:
        assert node.find_event("a2a.node.started", store="postgresql") is not None
        with httpx.Client(base_url=node.url) as anon:
            live, ready = anon.get("/healthz"), anon.get("/readyz")
        assert (live.status_code, live.json()) == (200, {"status": "ok"})
        assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
        assert ready.headers["cache-control"] == "no-store"


def test_a_task_is_read_followed_up_and_canceled_through_the_other_replica(
    pair: tuple[LiveNode, LiveNode],
) -> None:
    first, second = pair
    with client(first) as a, client(second) as b, client(second, PEER_B, KEY_B) as other:
        task_id = park_task(a)["id"]
        assert expect_result(get_task(b, task_id))["status"]["state"] == "input-required"
        followed = expect_result(send(b, message("more", task_id=task_id)))
        assert [m["parts"][0]["text"] for m in followed["history"] if m["role"] == "user"] == [
            "park me", "more"]
        # Another peer sees nothing of it, on either replica.
        expect_error(get_task(other, task_id), code=TASK_NOT_FOUND, request_id=1)
        canceled = expect_result(call(a, "tasks/cancel", {"id": task_id}))
        assert canceled["status"]["state"] == "canceled"
        expect_error(call(b, "tasks/cancel", {"id": task_id}), code=TASK_NOT_CANCELABLE,
                     request_id=1)
        expect_error(send(b, message("too late", task_id=task_id)), code=TASK_TERMINAL,
                     request_id=1)


def test_one_message_id_sent_to_both_replicas_at_once_makes_one_task(
    clients: list[httpx.Client],
) -> None:
    sent = message("once", message_id=unique("dup"))
    answers = race(clients, lambda _, c: expect_result(send(c, sent)))
    assert len({task["id"] for task in answers}) == 1
    assert all(task["status"]["state"] == "completed" for task in answers)


def test_concurrent_follow_ups_through_both_replicas_lose_no_history(
    clients: list[httpx.Client],
) -> None:
    task_id = park_task(clients[0])["id"]
    texts = [f"follow-up {i}" for i in range(len(clients))]
    race(clients, lambda i, c: expect_result(send(c, message(texts[i], task_id=task_id))))
    final = expect_result(get_task(clients[1], task_id))
    users = [m["parts"][0]["text"] for m in final["history"] if m["role"] == "user"]
    assert users[0] == "park me" and sorted(users[1:]) == sorted(texts)


def test_a_cancel_racing_follow_ups_on_both_replicas_ends_the_task_for_good(
    clients: list[httpx.Client],
) -> None:
    task_id = park_task(clients[0])["id"]

    def work(i: int, c: httpx.Client) -> Json:
        if i % 3 == 0:
            return dict(call(c, "tasks/cancel", {"id": task_id}).json())
        return dict(send(c, message(f"race {i}", task_id=task_id)).json())

    answers = race(clients, work)
    cancels = [a for i, a in enumerate(answers) if i % 3 == 0]
    follow_ups = [a for i, a in enumerate(answers) if i % 3 != 0]
    assert sum("result" in a for a in cancels) == 1
    assert all(a["error"]["code"] == TASK_NOT_CANCELABLE for a in cancels if "result" not in a)
    for answer in follow_ups:
        assert "result" in answer or answer["error"]["code"] == TASK_TERMINAL, answer
    final = expect_result(get_task(clients[1], task_id))
    assert final["status"]["state"] == "canceled"  # never revived


def test_a_setting_written_through_one_replica_applies_on_the_other(
    pair: tuple[LiveNode, LiveNode],
) -> None:
    first, second = pair
    with admin(first) as api, client(second) as b:
        assert api.put("/settings/a2a.max_message_parts", json={"value": 1}).status_code == 200
        try:
            refused = first_refusal(lambda: send(b, message("one", "two")), is_error)
            assert expect_error(refused, code=INVALID_PARAMS, request_id=1)["data"] == {
                "limit": 1}
        finally:
            assert api.delete("/settings/a2a.max_message_parts").status_code == 200
        expect_result(send(b, message("one", "two")))


def test_a_setting_written_by_the_cli_applies_on_both_replicas(
    replicas: Replicas, pair: tuple[LiveNode, LiveNode],
) -> None:
    replicas.cli("settings", "set", "a2a.max_message_parts", "1")
    try:
        for node in pair:
            with client(node) as c:
                refused = first_refusal(lambda c=c: send(c, message("one", "two")), is_error)
                expect_error(refused, code=INVALID_PARAMS, request_id=1)
    finally:
        replicas.cli("settings", "reset", "a2a.max_message_parts")


def test_a_peer_removed_through_one_replica_is_refused_by_the_other(
    replicas: Replicas, pair: tuple[LiveNode, LiveNode],
) -> None:
    first, second = pair
    with admin(first) as api, client(second, PEER_B, KEY_B) as b:
        expect_result(send(b, message("before")))
        assert api.delete(f"/peers/{PEER_B}").status_code == 204
        try:
            refused = first_refusal(lambda: send(b, message("after")), is_unauthorized)
            assert refused.status_code == 401
            assert refused.json()["error"]["code"] == UNAUTHENTICATED
        finally:
            replicas.add_peer(PEER_B, KEY_B)
        expect_result(send(b, message("back")))


def terminate_listeners(url: str) -> int:
    """Kill every replica's listening connection, as a lost link or a database restart would
    (`pg_terminate_backend`); how many there were."""
    async def terminate() -> int:
        conn = await asyncpg.connect(url)
        try:
            return int(await conn.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND application_name = $1",
                LISTENER_NAME))
        finally:
            await conn.close()

    return asyncio.run(terminate())


def test_a_replica_whose_listener_is_killed_still_refuses_a_removed_peer_and_listens_again(
    replicas: Replicas, pair: tuple[LiveNode, LiveNode],
) -> None:
    """Changes reach a replica by notification; with its listening connection killed, it
    reads the change counters itself (`store.revisions.polling`) until it listens again
    (`store.revisions.listening`), and a removed peer is refused at its next request
    whichever way the replica learnt of it."""
    first, second = pair
    with admin(first) as api, client(second, PEER_B, KEY_B) as b:
        expect_result(send(b, message("before")))
        second.wait_for_event("store.revisions.listening")
        listened = len(second.events("store.revisions.listening"))
        lost = len(second.events("store.revisions.polling"))
        assert terminate_listeners(replicas.env["SYNTHORG_DATABASE_URL"]) >= 2
        second.wait_for_events("store.revisions.polling", lost + 1)
        assert api.delete(f"/peers/{PEER_B}").status_code == 204
        try:
            refused = send(b, message("after"))
            assert refused.status_code == 401
            assert refused.json()["error"]["code"] == UNAUTHENTICATED
        finally:
            replicas.add_peer(PEER_B, KEY_B)
        expect_result(send(b, message("back")))
        second.wait_for_events("store.revisions.listening", listened + 1)
        assert api.delete(f"/peers/{PEER_B}").status_code == 204
        try:
            first_refusal(lambda: send(b, message("after again")), is_unauthorized)
        finally:
            replicas.add_peer(PEER_B, KEY_B)
        expect_result(send(b, message("back again")))


def test_a_peers_rate_limit_holds_across_both_replicas(
    pair: tuple[LiveNode, LiveNode]
) -> None:
    """One bucket for the peer in the shared database: requests alternating between the two
    replicas are admitted up to the burst (plus what the rate refills and a lease or two of
    slack), not up to a burst on each."""
    first, second = pair
    burst = 20  # a2a.peer_rate_limit_burst's default
    body = envelope("tasks/get", {"id": "no-such-task"})
    with admin(first) as api, client(first, PEER_B, KEY_B) as b1, \
            client(second, PEER_B, KEY_B) as b2:
        try:
            assert api.put(f"/peers/{PEER_B}/rate-limit",
                           json={"rateLimit": 1}).status_code == 200
            started = time.monotonic()
            statuses = []
            for i in range(3 * burst):
                response = (b1, b2)[i % 2].post("/api/v1/a2a/", json=body)
                statuses.append(response.status_code)
            elapsed = time.monotonic() - started
        finally:
            api.put(f"/peers/{PEER_B}/rate-limit", json={"rateLimit": None})
    admitted = statuses.count(200)
    assert set(statuses) == {200, 429}
    assert burst - 2 <= admitted <= burst + elapsed + 3, (admitted, elapsed)
    assert 200 in statuses[1::2] and 200 in statuses[0::2]  # each replica admitted some


def test_every_replicas_audit_trail_lands_in_one_place(
    replicas: Replicas, pair: tuple[LiveNode, LiveNode],
) -> None:
    since = replicas.cli("audit", "list", "--json").stdout
    before = len(json.loads(since))
    for i, node in enumerate(pair):
        with admin(node) as api:
            assert api.put("/settings/a2a.card_cache_max_entries",
                           json={"value": 100 + i}).status_code == 200
    replicas.cli("settings", "reset", "a2a.card_cache_max_entries")
    trail = json.loads(replicas.cli("audit", "list", "--json").stdout)[before:]
    assert [(r["event"], r["via"], r.get("new")) for r in trail] == [
        ("admin.setting.changed", "admin_api", 100),
        ("admin.setting.changed", "admin_api", 101),
        ("admin.setting.reset", "cli", 512),
    ]
    assert trail[1]["old"] == 100  # the second replica's write saw the first's
    text = replicas.cli("audit", "list", "--limit", "1").stdout
    assert text.count("\n") == 1 and "admin.setting.reset via=cli" in text


def test_a_starting_replica_spares_the_other_ones_running_task_and_a_killed_ones_is_resumed(
    replicas: Replicas, pair: tuple[LiveNode, LiveNode],
) -> None:
    """A task is running on replica A (its agent forwards it to a peer, which holds the
    answer). A replica starting now must not touch it; once A is killed, a live replica takes
    it over when A's lease runs out and resumes it: the same message (same messageId) goes
    to the peer again, and the task ends with the peer's answer."""
    release = threading.Event()
    with ScriptedServer() as downstream, ExitStack() as stack:
        downstream.script.append(Answer(200, {"jsonrpc": "2.0", "id": 1, "result": {}},
                                        hold=release, echo_id=True))
        replicas.add_peer(DOWNSTREAM, "downstream-key-1f0e", endpoint=downstream.url)
        running = stack.enter_context(replicas.replica("running"))
        pending: list[httpx.Response | Exception] = []

        def slow_send() -> None:
            with client(running) as c:
                try:
                    pending.append(send(c, message("take your time", agent_id="slow")))
                except httpx.HTTPError as exc:
                    pending.append(exc)

        sender = threading.Thread(target=slow_send)
        sender.start()
        task_id = running.wait_for_event("a2a.task.created")["task_id"]
        with replicas.replica("late") as late, client(late) as c:  # starts while it runs
            assert late.find_event("a2a.task.recovered") is None
            assert late.find_event("a2a.task.resumed") is None
            # Recorded as working once the agent starts (submitted in the moment before).
            state = expect_result(get_task(c, task_id))["status"]["state"]
            assert state in ("submitted", "working")
        done = {"kind": "task", "id": "down-1", "contextId": "ctx-down",
                "status": {"state": "completed"},
                "artifacts": [{"artifactId": "a-1", "parts": [{"kind": "text", "text": "ok"}]}]}
        downstream.script.append(Answer(200, {"jsonrpc": "2.0", "result": done}, echo_id=True))
        running.kill()  # kill -9: no retire, its lease just stops being renewed
        release.set()
        sender.join(30)
        # The live replicas sweep once per lease; the first to find it gone resumes it.
        with client(pair[1]) as c:
            final = wait_until_final(c, task_id, timeout=4 * float(LEASE) + 10)
        assert final["status"]["state"] == "completed", final
        assert [p["text"] for a in final["artifacts"] for p in a["parts"]] == ["ok"]
        assert any(node.find_event("a2a.task.resumed", task_id=task_id) for node in pair)
        sent = [json.loads(r.body)["params"]["message"]["messageId"]
                for r in downstream.received if r.body]
        assert len(sent) == 2 and sent[0] == sent[1]


def kill_cycle(replicas: Replicas, survivor: LiveNode, cycle: int) -> list[tuple[Json, Json]]:
    """Load through a new replica and the survivor; the new one killed mid-stream. What was
    acknowledged; the survivor must answer every request."""
    victim = replicas.replica(f"victim-{cycle}")
    victim.start()
    killed = threading.Event()
    failures: list[str] = []
    try:
        with ExitStack() as stack:
            parked = park_task(stack.enter_context(client(survivor)))
            nodes = [victim, survivor] * 3
            pool = [stack.enter_context(client(node)) for node in nodes]

            def load(i: int, c: httpx.Client) -> list[tuple[Json, Json]]:
                done: list[tuple[Json, Json]] = []
                shared_id = unique(f"c{cycle}-shared")
                for n in range(60):
                    if n % 5 == 0:
                        sent = message(f"c{cycle} w{i} n{n}", task_id=parked["id"])
                    elif n % 7 == 0:
                        sent = message("same key", message_id=shared_id)  # a retry
                    else:
                        sent = message(f"c{cycle} w{i} n{n}")
                    try:
                        response = send(c, sent)
                    except httpx.HTTPError:
                        if nodes[i] is survivor:
                            failures.append(f"w{i} n{n}: connection failed")
                        return done
                    if response.status_code == 200 and "result" in response.json():
                        done.append((sent, response.json()["result"]))
                    elif nodes[i] is survivor:
                        failures.append(f"w{i} n{n}: {response.status_code}")
                    if i == 0 and n == 20:
                        victim.kill()  # SIGKILL, mid-stream
                        killed.set()
                return done

            acknowledged = [pair for done in race(pool, load) for pair in done]
    finally:
        if victim.proc is not None and victim.proc.poll() is None:
            victim.kill()
    assert killed.is_set()
    assert failures == []  # the other replica kept serving
    return acknowledged


def test_kill_9_of_one_replica_under_load_loses_nothing_and_duplicates_nothing(
    replicas: Replicas, pair: tuple[LiveNode, LiveNode],
) -> None:
    """Three cycles: load through both replicas (new tasks, retries of one key, follow-ups),
    one replica killed with SIGKILL mid-stream; the other keeps serving. Every acknowledged
    task reads back, every acknowledged messageId replays to its task, one task per key."""
    survivor = pair[1]
    acknowledged = [pair for cycle in range(3) for pair in kill_cycle(replicas, survivor, cycle)]
    assert acknowledged
    by_key: dict[str, set[str]] = {}
    with client(survivor) as c:
        for sent, answer in acknowledged:
            stored = expect_result(get_task(c, answer["id"]))
            assert sent["messageId"] in {m["messageId"] for m in stored["history"]}
            replay = expect_result(send(c, sent))  # the key answers the same task
            assert replay["id"] == answer["id"]
            by_key.setdefault(sent["messageId"], set()).add(answer["id"])
    assert all(len(ids) == 1 for ids in by_key.values())  # zero duplicate tasks


def answer_of(task: Json) -> list[str]:
    return [part["text"] for artifact in task.get("artifacts") or [] for part in artifact["parts"]]


def wait_until_written(c: httpx.Client, task_id: str, chunks: int, timeout: float) -> Json:
    """The task once its answer has at least `chunks` chunks (polled, as wait_until_final)."""
    deadline = time.monotonic() + timeout
    tick = threading.Event()
    while True:
        task = expect_result(get_task(c, task_id))
        if len(answer_of(task)) >= chunks:
            return task
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} wrote fewer than {chunks} chunks in {timeout}s")
        tick.wait(0.1)


def test_the_tasks_of_a_killed_replica_are_resumed_once_each_while_another_replica_starts(
    replicas: Replicas, pair: tuple[LiveNode, LiveNode],
) -> None:
    """A replica is killed (kill -9) while its agent writes three answers chunk by chunk; a
    third replica starts meanwhile (it takes over at start what it finds left behind) while
    the other two sweep once per lease. Each task is resumed by one replica only, and ends
    completed with every chunk of its answer exactly once, in order."""
    victim, late = replicas.replica("writer-victim"), replicas.replica("writer-late")
    try:
        victim.start()
        with client(victim) as c:
            ids = [
                expect_result(call(c, "message/send", {
                    "message": message(f"story {i}", agent_id="writer"),
                    "configuration": {"blocking": False},
                }))["id"]
                for i in range(3)
            ]
        with client(pair[0]) as c:
            for task_id in ids:
                assert len(answer_of(wait_until_written(c, task_id, 1, 30))) < WRITER_CHUNKS
        victim.kill()
        late.start()
        with client(pair[1]) as c:
            finals = [wait_until_final(c, task_id, 4 * float(LEASE) + 30) for task_id in ids]
        for i, final in enumerate(finals):
            assert final["status"]["state"] == "completed", final
            assert answer_of(final) == [f"[{n}] story {i}\n" for n in range(1, WRITER_CHUNKS + 1)]
        resumed = [event["task_id"] for node in (*pair, late)
                   for event in node.events("a2a.task.resumed") if event["task_id"] in ids]
        assert sorted(resumed) == sorted(ids)  # once each, by one replica
    finally:
        late.stop()
        victim.stop()
