"""The operator console over plain HTTP against a live node: sessions, sign-in and sign-out,
the CSRF and origin checks on every form, the security headers on every answer, and the
console switched off in config. (tests/browser drives the pages in Chromium.)"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from synthorg.admin.token import TOKEN_ENV
from tests.integration.helpers import create_task
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

TOKEN = "console-admin-token-LEAKCHECK-5b1e"
CALLER, CALLER_KEY = "caller", "caller-key-LEAKCHECK-93af"
CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{CALLER}]
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
  - {{id: parker, name: Parker, executor: {{kind: park}}}}
"""
PAGES = ("/console", "/console/peers", "/console/tasks", "/console/settings", "/console/audit")
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir = tmp_path_factory.mktemp("console-http")
    add_peer(data_dir, CALLER, CALLER_KEY, endpoint="http://127.0.0.1:9")
    with LiveNode(data_dir, CONFIG, env={TOKEN_ENV: TOKEN}) as live:
        yield live
    for line in live.lines:
        assert TOKEN not in line


def browser(node: LiveNode) -> httpx.Client:
    return httpx.Client(base_url=node.url, timeout=30.0, follow_redirects=False)


def sign_in(client: httpx.Client, token: str = TOKEN) -> httpx.Response:
    return client.post("/console/signin", data={"token": token, "next": "/console"})


def csrf_of(page: httpx.Response) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


def assert_secured(response: httpx.Response) -> None:
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-content-type-options"] == "nosniff"


def test_no_page_is_served_without_a_session(node: LiveNode) -> None:
    with browser(node) as client:
        for path in (*PAGES, "/console/tasks/some-task", "/console/nowhere"):
            response = client.get(path)
            assert response.status_code == 401, path
            assert 'type="password"' in response.text and "Sign in" in response.text
            assert_secured(response)


def test_sign_in_sets_a_strict_http_only_cookie_and_sign_out_ends_it(node: LiveNode) -> None:
    with browser(node) as client:
        signed = sign_in(client)
        assert signed.status_code == 303 and signed.headers["location"] == "/console"
        cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/console" in cookie
        assert TOKEN not in cookie
        page = client.get("/console")
        assert page.status_code == 200 and "Overview" in page.text
        assert_secured(page)
        stolen = dict(client.cookies)
        out = client.post("/console/signout", data={"csrf": csrf_of(page)})
        assert out.status_code == 303
        # The server forgot the session: the old cookie, replayed, is no session at all.
        with browser(node) as replay:
            replay.cookies.update(stolen)
            assert replay.get("/console").status_code == 401


def test_a_wrong_token_is_refused_without_a_cookie(node: LiveNode) -> None:
    with browser(node) as client:
        refused = sign_in(client, "not-the-token-at-all")
        assert refused.status_code == 401 and "set-cookie" not in refused.headers
        assert "not the admin token" in refused.text
        assert client.get("/console").status_code == 401


def test_sign_in_goes_back_to_the_console_page_asked_for_and_nowhere_else(
        node: LiveNode) -> None:
    with browser(node) as client:
        asked = client.post("/console/signin", data={"token": TOKEN, "next": "/console/audit"})
        assert asked.headers["location"] == "/console/audit"
    with browser(node) as client:
        away = client.post("/console/signin", data={"token": TOKEN, "next": "//evil.example/"})
        assert away.headers["location"] == "/console"
    with browser(node) as client:  # the page's query comes along (a filter, a task's peer)
        asked = "/console/tasks?state=working&since=2026-01-31T12%3A00%3A00Z"
        form = client.get(asked)
        assert form.status_code == 401
        assert f'name="next" value="{asked.replace("&", "&amp;")}"' in form.text
        back = client.post("/console/signin", data={"token": TOKEN, "next": asked})
        assert back.headers["location"] == asked
        for elsewhere in ("/elsewhere?/console/", "/console?x=1//evil.example"):
            away = client.post("/console/signin", data={"token": TOKEN, "next": elsewhere})
            assert away.headers["location"] == "/console"


def test_a_post_without_the_session_csrf_token_is_refused(node: LiveNode) -> None:
    with browser(node) as client:
        sign_in(client)
        page = client.get("/console")
        for data in ({"other": "1"}, {"csrf": "forged"}, {"csrf": csrf_of(page) + "x"}):
            refused = client.post("/console/signout", data=data)
            assert refused.status_code == 403 and "CSRF" in refused.text
            assert_secured(refused)
        assert client.get("/console").status_code == 200  # still signed in


def test_a_cross_site_post_is_refused_even_with_the_token(node: LiveNode) -> None:
    with browser(node) as client:
        sign_in(client)
        csrf = csrf_of(client.get("/console"))
        for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
            refused = client.post("/console/signout", data={"csrf": csrf}, headers=headers)
            assert refused.status_code == 403 and "Cross-site" in refused.text
        same = client.post("/console/signout", data={"csrf": csrf},
                           headers={"Origin": node.url, "Sec-Fetch-Site": "same-origin"})
        assert same.status_code == 303


def test_forms_are_bounded_and_urlencoded(node: LiveNode) -> None:
    with browser(node) as client:
        assert client.post("/console/signin", content=b'{"token": 1}',
                           headers={"Content-Type": "application/json"}).status_code == 415
        big = client.post("/console/signin", content=b"token=" + b"a" * 20000, headers=FORM)
        assert big.status_code == 413
        assert client.post("/console/signin", content=b"token=%ff%fe",
                           headers=FORM).status_code == 401


def test_the_static_assets_are_the_nodes_own(node: LiveNode) -> None:
    with browser(node) as client:
        script = client.get("/console/static/console.js")
        assert script.status_code == 200 and script.headers["content-type"].startswith(
            "text/javascript")
        assert client.get("/console/static/console.css").status_code == 200
        assert client.get("/console/static/%2e%2e%2fapp.py").status_code == 404
        sign_in(client)
        page = client.get("/console").text
        for url in re.findall(r'(?:src|href)="([^"]+)"', page):
            assert url.startswith(("/console", "#")), url
        assert "<script>" not in page and " on" + "click=" not in page


def test_overview_shows_the_status_and_readiness(node: LiveNode) -> None:
    with browser(node) as client:
        sign_in(client)
        page = client.get("/console")
        assert "Readiness" in page.text and "ready" in page.text
        assert "A2a enabled" in page.text


def test_the_root_points_a_browser_at_the_console(node: LiveNode) -> None:
    with browser(node) as client:
        root = client.get("/")
        assert root.status_code == 302 and root.headers["location"] == "console"


def test_the_console_can_be_turned_off(tmp_path: Path) -> None:
    config = CONFIG + "console:\n  enabled: false\n"
    with LiveNode(tmp_path, config, env={TOKEN_ENV: TOKEN}) as live, browser(live) as client:
        assert client.get("/console").status_code == 404
        assert client.get("/").headers["location"] == "docs"
        assert sign_in(client).status_code == 404


LINK = "link-secret-LEAKCHECK-3f8a"
ONWARD_B = """\
a2a:
  enabled: true
  node_name: node-b
  allowed_peers: [node-a]
agents:
  - {id: parker, name: Parker, executor: {kind: park}}
"""
ONWARD_A = f"""\
a2a:
  enabled: true
  node_name: node-a
  allowed_peers: [{CALLER}]
agents:
  - {{id: fwd, name: Forwarder, executor: {{kind: peer, peer: node-b, agent: parker}}}}
"""


@pytest.fixture(scope="module")
def onward(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveNode, str]]:
    """Node A, whose agent forwards to node B's park agent, and the task a peer gave A (it
    waits for input, as B's does): A holds one outbound task, to node-b."""
    data = tmp_path_factory.mktemp("console-onward")
    add_peer(data / "b", "node-a", LINK, endpoint="http://127.0.0.1:9")
    with LiveNode(data / "b", ONWARD_B) as b:
        add_peer(data / "a", "node-b", LINK, endpoint=b.url)
        add_peer(data / "a", CALLER, CALLER_KEY, endpoint="http://127.0.0.1:9")
        with LiveNode(data / "a", ONWARD_A, env={TOKEN_ENV: TOKEN}) as a, \
                a.client(CALLER, CALLER_KEY) as caller:
            task = create_task(caller, "pass it on", agent_id="fwd")
            assert task["status"]["state"] == "input-required"
            yield a, task["id"]


def test_an_outbound_task_has_its_page_with_its_peer_state_and_chain(
        onward: tuple[LiveNode, str]) -> None:
    node, origin = onward
    with browser(node) as client:
        sign_in(client)
        listed = client.get("/console/tasks", params={"direction": "outbound"})
        (row,) = re.findall(r'<tr data-task="([^"]+)"><td><a href="([^"]+)"', listed.text)
        local_id, link = row
        assert link == f"/console/tasks/{local_id}?direction=outbound&amp;peer=node-b"
        page = client.get(link.replace("&amp;", "&"))
        assert page.status_code == 200, page.text
        assert_secured(page)
        assert f'<span data-field="task-id">{local_id}</span>' in page.text
        assert '<dd data-field="state">input-required</dd>' in page.text
        assert '<a href="/console/peers/node-b">node-b</a>' in page.text
        chain = re.search(r'<dd data-field="chain">(.*?)</dd>', page.text, re.S)
        assert chain and f'<a href="/console/tasks/{origin}">task {origin}</a>' in chain[1]
        assert "node-b" in chain[1] and "input-required" in chain[1]
        # the bare address finds it too, once no peer has a task of that id
        assert client.get(f"/console/tasks/{local_id}").text == page.text
        # the task it forwards links on to it
        inbound = client.get(f"/console/tasks/{origin}")
        assert link in inbound.text
        unknown = client.get("/console/tasks/no-such-task")
        assert unknown.status_code == 404 and "inbound or outbound" in unknown.text
        wrong_peer = client.get(f"/console/tasks/{local_id}",
                                params={"direction": "outbound", "peer": CALLER})
        assert wrong_peer.status_code == 404
