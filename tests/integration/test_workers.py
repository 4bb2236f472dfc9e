"""One node, two worker processes on one port and one store, driven at once, on each backend
(the data dir's SQLite, and a throwaway PostgreSQL database where each worker reaches the
database itself, as a replica does).

Every rule that one process used to keep with its own locks must hold across processes:
follow-ups and cancels of one task, the `(peer, messageId)` key, runtime settings and
catalog changes. Clients hold one connection each; the test first checks that the
connections really are spread over both workers (from /proc), then races them.
"""

from __future__ import annotations

import os
import re
import select
import signal
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
from cryptography.fernet import Fernet

from synthorg.admin.token import TOKEN_FILENAME
from synthorg.console.sessions import COOKIE
from tests.conftest import BACKENDS
from tests.integration.conftest import AGENTS_YAML, KEY_A, PEER_A, api_key_headers, peer_client
from tests.integration.helpers import (
    INVALID_PARAMS,
    TASK_NOT_CANCELABLE,
    TASK_TERMINAL,
    UNAUTHENTICATED,
    Json,
    call,
    expect_result,
    get_task,
    message,
    park_task,
    send,
    unique,
)
from tests.integration.live import LiveNode
from tests.support.node import cli
from tests.support.postgres import throwaway_database

T = TypeVar("T")
CONNECTIONS = 12
CONFIG = f"a2a:\n  enabled: true\n  allowed_peers: [{PEER_A}]\n{AGENTS_YAML}"


def worker_pids(node: LiveNode) -> list[int]:
    assert node.proc is not None
    pid = node.proc.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    # multiprocessing's resource tracker is a child too, but serves nothing.
    return [int(child) for child in children
            if b"resource_tracker" not in Path(f"/proc/{child}/cmdline").read_bytes()]


def established_inodes(port: int) -> set[str]:
    """Inodes of the node side of ESTABLISHED loopback connections to `port`."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == "01":
                inodes.add(fields[9])
    return inodes


def connections_per_worker(node: LiveNode) -> dict[int, int]:
    inodes = established_inodes(node.port)
    counts = {}
    for pid in worker_pids(node):
        held = 0
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                held += 1
        counts[pid] = held
    return counts


def worker_serving(node: LiveNode, response: httpx.Response) -> int:
    """The worker holding the connection `response` came over (matched by the client's port
    in /proc/net/tcp, then the socket's inode among each worker's descriptors)."""
    client_port = response.extensions["network_stream"].get_extra_info("client_addr")[1]
    inode = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote = (int(f.rsplit(":", 1)[1], 16) for f in fields[1:3])
            if (local, remote) == (node.port, client_port) and fields[3] == "01":
                inode = fields[9]
    assert inode is not None, client_port
    for pid in worker_pids(node):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return pid
            except OSError:
                continue
    raise AssertionError(f"no worker holds the connection from port {client_port}")


class Store:
    """Where the node keeps its state: the environment the node and the CLI share."""

    def __init__(self, url: str | None) -> None:
        # On PostgreSQL each worker says it serves once it reached the database.
        self.started_events = 1 if url is None else 2
        self.env = {} if url is None else {
            "SYNTHORG_DATABASE_URL": url, "SYNTHORG_SECRET_KEY": Fernet.generate_key().decode()
        }

    def cli(self, data_dir: Path, *args: str, stdin: str | None = None) -> None:
        cli(data_dir, *args, stdin=stdin, env=self.env)

    def add_peer(self, data_dir: Path, name: str, key: str) -> None:
        self.cli(data_dir, "peers", "add", name, "--endpoint", "http://127.0.0.1:9", stdin=key)

    def node(self, data_dir: Path) -> LiveNode:
        return LiveNode(data_dir, CONFIG, env={"SYNTHORG_WORKERS": "2", **self.env})

    def started(self, node: LiveNode) -> LiveNode:
        """`node` once every process of it serves."""
        node.wait_for_events("a2a.node.started", self.started_events, timeout=30)
        return node


@pytest.fixture(scope="module", params=BACKENDS)
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    if request.param == "sqlite":
        yield Store(None)
        return
    with throwaway_database() as url:
        yield Store(url)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory, store: Store) -> Iterator[LiveNode]:
    data_dir = tmp_path_factory.mktemp("workers")
    store.add_peer(data_dir, PEER_A, KEY_A)
    with store.node(data_dir) as started:
        yield store.started(started)


@pytest.fixture(scope="module")
def clients(node: LiveNode) -> Iterator[list[httpx.Client]]:
    """One client (one kept-alive connection) each, spread over both workers."""
    with ExitStack() as stack:
        pool = [
            stack.enter_context(peer_client(node, api_key_headers(PEER_A, KEY_A)))
            for _ in range(CONNECTIONS)
        ]
        with ThreadPoolExecutor(CONNECTIONS) as executor:  # open them all at once
            list(executor.map(lambda c: get_task(c, "warm-up"), pool))
        yield pool


def race(clients: list[httpx.Client], work: Callable[[int, httpx.Client], T]) -> list[T]:
    with ThreadPoolExecutor(len(clients)) as executor:
        return list(executor.map(work, range(len(clients)), clients))


def test_two_workers_share_the_port_and_the_connections(
    node: LiveNode, clients: list[httpx.Client]
) -> None:
    assert node.find_event("a2a.node.started", workers=2) is not None
    counts = connections_per_worker(node)
    assert len(counts) == 2, counts
    assert all(held > 0 for held in counts.values()), counts


def test_one_message_id_sent_through_every_connection_makes_one_task(
    clients: list[httpx.Client],
) -> None:
    sent = message("once", message_id=unique("dup"))
    answers = race(clients, lambda _, client: expect_result(send(client, sent)))
    assert len({task["id"] for task in answers}) == 1
    assert all(task["status"]["state"] == "completed" for task in answers)


def test_concurrent_follow_ups_of_one_task_lose_no_history(
    clients: list[httpx.Client],
) -> None:
    task_id = park_task(clients[0])["id"]
    texts = [f"follow-up {i}" for i in range(len(clients))]
    race(clients, lambda i, client: expect_result(
        send(client, message(texts[i], task_id=task_id))
    ))
    final = expect_result(get_task(clients[0], task_id))
    users = [m["parts"][0]["text"] for m in final["history"] if m["role"] == "user"]
    assert users[0] == "park me" and sorted(users[1:]) == sorted(texts)
    assert final["status"]["state"] == "input-required"


def test_a_cancel_racing_follow_ups_ends_the_task_for_good(
    clients: list[httpx.Client],
) -> None:
    task_id = park_task(clients[0])["id"]

    def work(i: int, client: httpx.Client) -> Json:
        if i % 3 == 0:
            return dict(call(client, "tasks/cancel", {"id": task_id}).json())
        return dict(send(client, message(f"race {i}", task_id=task_id)).json())

    answers = race(clients, work)
    cancels = [a for i, a in enumerate(answers) if i % 3 == 0]
    follow_ups = [a for i, a in enumerate(answers) if i % 3 != 0]
    assert sum("result" in a for a in cancels) == 1  # exactly one cancel wins ...
    assert all(a.get("error", {}).get("code") == TASK_NOT_CANCELABLE
               for a in cancels if "result" not in a)  # ... the others find it final
    for answer in follow_ups:  # a follow-up lands before the cancel or is refused after it
        assert "result" in answer or answer["error"]["code"] == TASK_TERMINAL, answer
    final = expect_result(get_task(clients[0], task_id))
    assert final["status"]["state"] == "canceled"
    landed = {m["parts"][0]["text"] for m in final["history"] if m["role"] == "user"}
    assert {a["result"]["history"][-2]["parts"][0]["text"]
            for a in follow_ups if "result" in a} <= landed


def test_a_setting_written_by_the_cli_applies_on_every_worker(
    node: LiveNode, clients: list[httpx.Client], store: Store
) -> None:
    store.cli(node.data_dir, "settings", "set", "a2a.max_message_parts", "1")
    try:
        two_parts = [message("one", "two") for _ in clients]
        answers = race(clients, lambda i, client: send(client, two_parts[i]).json())
        assert all(a["error"]["code"] == INVALID_PARAMS for a in answers), answers
    finally:
        store.cli(node.data_dir, "settings", "reset", "a2a.max_message_parts")
    answers = race(clients, lambda i, client: send(client, message("one", "two")).json())
    assert all("result" in a for a in answers)


def test_a_peer_removed_by_the_cli_is_refused_by_every_worker(
    node: LiveNode, store: Store
) -> None:
    store.add_peer(node.data_dir, "peer-gone", "key-gone-4b1d9e7f2a")
    headers = api_key_headers(PEER_A, KEY_A)
    with ExitStack() as stack:
        pool = [stack.enter_context(peer_client(node, headers)) for _ in range(CONNECTIONS)]
        race(pool, lambda _, client: expect_result(send(client, message("before"))))
        store.cli(node.data_dir, "peers", "remove", PEER_A)
        try:
            answers = race(pool, lambda _, client: send(client, message("after")))
            assert all(a.status_code == 401 for a in answers)
            assert all(a.json()["error"]["code"] == UNAUTHENTICATED for a in answers)
        finally:
            store.add_peer(node.data_dir, PEER_A, KEY_A)


def test_a_console_session_holds_on_every_worker_and_its_sign_out_ends_it_on_all(
    node: LiveNode,
) -> None:
    token = (node.data_dir / TOKEN_FILENAME).read_text().strip()
    with peer_client(node) as first:
        signed = first.post("/console/signin", data={"token": token, "next": "/console"})
        assert signed.status_code == 303
        cookie = signed.cookies[COOKIE]
    with ExitStack() as stack:
        # Fresh connections, opened at once: spread over both workers, one of them not the
        # worker that made the session.
        browsers = [stack.enter_context(peer_client(node)) for _ in range(CONNECTIONS)]
        for browser in browsers:
            browser.cookies.set(COOKIE, cookie, path="/console")
        pages = race(browsers, lambda _, browser: browser.get("/console"))
        assert all(page.status_code == 200 for page in pages), [p.status_code for p in pages]
        served_by = [worker_serving(node, page) for page in pages]
        assert set(served_by) == set(worker_pids(node)), served_by
        # A form from a page one worker drew, posted through a connection to the other.
        csrf = re.search(r'name="csrf" value="([^"]+)"', pages[0].text)
        assert csrf is not None
        other = next(i for i, pid in enumerate(served_by) if pid != served_by[0])
        out = browsers[other].post("/console/signout", data={"csrf": csrf.group(1)})
        assert out.status_code == 303
        for browser in browsers:
            browser.cookies.set(COOKIE, cookie, path="/console")  # as if kept by another tab
        after = race(browsers, lambda _, browser: browser.get("/console"))
        assert all(page.status_code == 401 for page in after), [p.status_code for p in after]
        assert {worker_serving(node, page) for page in after} == set(served_by)


def test_kill_9_under_load_loses_nothing_acknowledged(tmp_path: Path, store: Store) -> None:
    """Both workers busy with new tasks and follow-ups; the node's process killed with
    SIGKILL mid-stream. Its workers end with it (no orphan keeps the port); every
    acknowledged task reads back as answered, and every acknowledged messageId replays."""
    store.add_peer(tmp_path, PEER_A, KEY_A)
    node = store.started(store.node(tmp_path).start())  # type: ignore[arg-type]
    acknowledged: list[tuple[Json, Json]] = []
    workers: list[int] = []
    try:
        with ExitStack() as stack:
            pool = [stack.enter_context(peer_client(node, api_key_headers(PEER_A, KEY_A)))
                    for _ in range(8)]
            parked = park_task(pool[0])
            workers = [os.pidfd_open(pid) for pid in worker_pids(node)]
            assert node.proc is not None
            supervisor = node.proc.pid

            def load(i: int, client: httpx.Client) -> list[tuple[Json, Json]]:
                done: list[tuple[Json, Json]] = []
                for n in range(400):
                    sent = (message(f"w{i}-{n}", task_id=parked["id"]) if n % 4 == 0
                            else message(f"w{i}-{n}"))
                    try:
                        response = send(client, sent)
                    except httpx.HTTPError:
                        return done  # the node is gone
                    if response.status_code == 200 and "result" in response.json():
                        done.append((sent, response.json()["result"]))
                    if i == 0 and n == 60:
                        os.kill(supervisor, signal.SIGKILL)  # the node's own pid only
                return done

            for done in race(pool, load):
                acknowledged += done
    finally:
        if node.proc is not None and node.proc.poll() is None:
            node.kill()
    assert acknowledged and len(workers) == 2
    for pidfd in workers:  # readable once the process has exited
        assert select.select([pidfd], [], [], 15)[0] == [pidfd], "a worker outlived the node"
        os.close(pidfd)
    restarted = store.started(store.node(tmp_path).start())  # type: ignore[arg-type]
    try:
        with peer_client(restarted, api_key_headers(PEER_A, KEY_A)) as client:
            for sent, answer in acknowledged:
                stored = expect_result(get_task(client, answer["id"]))
                assert sent["messageId"] in {m["messageId"] for m in stored["history"]}
                if "taskId" not in sent:
                    assert stored["status"]["state"] == "completed"
                replay = expect_result(send(client, sent))  # the key answers the same task
                assert replay["id"] == answer["id"]
    finally:
        restarted.stop()


@pytest.mark.parametrize("command", [("synthorg.api",), ("synthorg.cli.main", "serve")],
                         ids=["python -m synthorg.api", "synthorg-a2a serve"])
def test_the_workers_option_starts_that_many_workers_over_the_environment(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    data_dir = tmp_path / "node"
    Store(None).add_peer(data_dir, PEER_A, KEY_A)
    node = LiveNode(data_dir, CONFIG, env={"SYNTHORG_WORKERS": "1"})  # the option wins
    node.argv = [sys.executable, "-m", *command, "--workers", "2"]
    with node, ExitStack() as stack:
        assert node.wait_for_event("a2a.node.started")["workers"] == 2
        pool = [stack.enter_context(peer_client(node, api_key_headers(PEER_A, KEY_A)))
                for _ in range(CONNECTIONS)]
        # An answer on each connection: every worker that holds one is serving.
        race(pool, lambda _, client: get_task(client, "warm-up"))
        counts = connections_per_worker(node)
        assert len(counts) == 2, counts
        assert all(held > 0 for held in counts.values()), counts
