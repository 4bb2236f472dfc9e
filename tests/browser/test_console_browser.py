"""The operator console in headless Chromium against a live node: signing in and out, a
wrong token, every page, and that nothing a peer wrote runs as script."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from synthorg.admin.token import TOKEN_ENV
from synthorg.console.sessions import COOKIE
from tests.browser.conftest import shoot
from tests.browser.hostile import ALL, IMG, SCRIPT, STYLE, SVG, CardServer
from tests.integration.helpers import (
    cancel_task,
    create_task,
    expect_result,
    get_task,
    message,
    send,
)
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

TOKEN = "browser-admin-token-LEAKCHECK-2c7d"
CALLER, CALLER_KEY = "caller", "caller-key-LEAKCHECK-4e1b"
CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{CALLER}]
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
  - {{id: parker, name: Parker, executor: {{kind: park}}}}
"""


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir = tmp_path_factory.mktemp("console-browser")
    add_peer(data_dir, CALLER, CALLER_KEY, endpoint="http://127.0.0.1:9")
    with LiveNode(data_dir, CONFIG, env={TOKEN_ENV: TOKEN}) as live:
        yield live


@pytest.fixture(scope="module")
def card_server() -> Iterator[CardServer]:
    with CardServer() as server:
        yield server


def sign_in(page: Any, node: LiveNode, token: str = TOKEN, path: str = "/console") -> None:
    page.goto(node.url + path)
    page.get_by_label("Admin token").fill(token)
    page.get_by_role("button", name="Sign in").click()


def test_a_wrong_token_keeps_the_sign_in_form(page: Any, node: LiveNode) -> None:
    sign_in(page, node, "certainly-not-the-token")
    assert page.get_by_role("alert").inner_text() == "That is not the admin token."
    assert page.get_by_label("Admin token").is_visible()
    shoot(page, "signin")


def test_sign_in_shows_the_overview_and_sign_out_ends_the_session(
        page: Any, node: LiveNode) -> None:
    sign_in(page, node)
    page.get_by_role("heading", name="Overview").wait_for()
    assert page.locator('[data-field="readiness"]').inner_text() == "ready"
    shoot(page, "overview")
    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("Admin token").wait_for()
    page.goto(node.url + "/console")
    assert page.get_by_label("Admin token").is_visible()
    assert page.context.cookies() == []


def assert_nothing_ran(page: Any) -> None:
    assert page.evaluate("window.pwned === undefined"), page.evaluate("window.pwned")
    assert page.locator("body").is_visible()


def test_adding_a_peer_shows_its_card_as_text(page: Any, node: LiveNode,
                                              card_server: CardServer) -> None:
    sign_in(page, node, path="/console/peers")
    page.get_by_label("Name").fill("hostile")
    page.get_by_label("Endpoint").fill(card_server.url + "/a2a")
    page.get_by_label("Secret").fill("hostile-secret-LEAKCHECK-77")
    page.get_by_role("button", name="Add peer").click()
    page.get_by_role("status").wait_for()
    assert page.get_by_role("status").inner_text() == "Peer added."
    assert page.locator('[data-field="peer-name"]').inner_text() == "hostile"
    card = page.locator('[data-field="card"]').inner_text()
    assert SCRIPT in card and STYLE in card and "not verified" in card
    skills = page.get_by_role("table").inner_text()
    assert IMG in skills and SVG in skills
    assert "hostile-secret" not in page.content()
    assert_nothing_ran(page)
    shoot(page, "peer")


def test_a_peer_rate_limit_is_set_and_a_bad_one_refused(page: Any, node: LiveNode) -> None:
    page.goto(node.url + "/console/peers/hostile")
    field = page.get_by_label("Requests per second", exact=False)
    field.fill("lots")
    page.get_by_role("button", name="Save limit").click()
    assert "rateLimit" in page.get_by_role("alert").inner_text()
    page.get_by_label("Requests per second", exact=False).fill("25")
    page.get_by_role("button", name="Save limit").click()
    assert page.get_by_role("status").inner_text() == "Rate limit saved."
    assert "25.0 per second" in page.content() or "25 per second" in page.content()


def test_a_setting_is_changed_and_a_bad_value_refused_with_the_specs_message(
        page: Any, node: LiveNode) -> None:
    page.goto(node.url + "/console/settings")
    name = "a2a.max_message_parts"
    field = page.get_by_label(f"New value for {name}")
    field.fill("0")
    field.press("Enter")
    alert = page.get_by_role("alert").inner_text()
    assert alert.startswith(f"{name} must be an integer from"), alert
    page.get_by_label(f"New value for {name}").fill("5")
    page.get_by_label(f"New value for {name}").press("Enter")
    assert page.get_by_role("status").inner_text() == "Setting saved."
    assert page.locator(f'[data-field="value-{name}"]').inner_text() == "5"
    shoot(page, "settings")


def test_the_overview_draws_its_charts(page: Any, node: LiveNode) -> None:
    page.goto(node.url + "/console")
    assert page.locator("figure svg").count() == 3
    assert_nothing_ran(page)


def test_removing_a_peer_asks_first(page: Any, node: LiveNode) -> None:
    page.goto(node.url + "/console/peers")
    shoot(page, "peers")
    page.goto(node.url + "/console/peers/hostile")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Remove peer").click()
    assert page.get_by_role("status").inner_text() == "Peer removed."
    assert "hostile" not in page.get_by_role("table").inner_text()


@pytest.fixture(scope="module")
def caller(node: LiveNode) -> Iterator[httpx.Client]:
    with node.client(CALLER, CALLER_KEY) as client:
        yield client


def parked(caller: httpx.Client, text: str) -> str:
    """A peer's task on the park agent: it waits for input until it is canceled."""
    task = create_task(caller, text, agent_id="parker")
    assert task["status"]["state"] == "input-required"
    return str(task["id"])


def peer_sees(caller: httpx.Client, task_id: str) -> str:
    return str(expect_result(get_task(caller, task_id))["status"]["state"])


def test_a_peers_task_shows_as_text_and_changes_state_live(
        page: Any, node: LiveNode, caller: httpx.Client) -> None:
    task_id = parked(caller, ALL)
    page.goto(node.url + "/console/tasks?peer=" + CALLER)
    row = page.locator(f'[data-task="{task_id}"]')
    assert "input-required" in row.inner_text()
    shoot(page, "tasks")
    row.get_by_role("link").click()
    page.locator('[data-field="task-id"]', has_text=task_id).wait_for()
    assert page.locator('[data-field="state"]').inner_text() == "input-required"
    assert ALL in page.locator('[data-field="history"]').inner_text()
    assert_nothing_ran(page)
    shoot(page, "task")
    page.evaluate("window.stillHere = true")  # gone if the page were loaded again
    expect_result(send(caller, message("a further answer", task_id=task_id)))
    page.locator('[data-field="history"]', has_text="a further answer").wait_for()
    expect_result(cancel_task(caller, task_id))
    page.locator('[data-field="state"]', has_text="canceled").wait_for()
    assert page.evaluate("window.stillHere === true")
    assert page.get_by_role("button", name="Cancel task").count() == 0
    assert_nothing_ran(page)


def test_a_task_is_canceled_from_its_page(page: Any, node: LiveNode,
                                          caller: httpx.Client) -> None:
    task_id = parked(caller, "wait for me")
    page.goto(f"{node.url}/console/tasks/{task_id}?peer={CALLER}")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Cancel task").click()
    page.get_by_role("status").filter(has_text="Task canceled.").wait_for()
    assert page.locator('[data-field="state"]').inner_text() == "canceled"
    assert page.get_by_role("button", name="Cancel task").count() == 0
    assert peer_sees(caller, task_id) == "canceled"


def test_a_cross_site_form_post_is_refused(page: Any, node: LiveNode, caller: httpx.Client,
                                           card_server: CardServer) -> None:
    """Another origin on the same host (same site: the session's SameSite=Strict cookie goes
    with the post) serves a form that posts itself to the console's cancel at once."""
    task_id = parked(caller, "keep me")
    target = f"{node.url}/console/tasks/{task_id}/cancel"
    card_server.page = (f'<form method="post" action="{target}">'
                        f'<input type="hidden" name="peer" value="{CALLER}"></form>'
                        "<script>document.forms[0].submit()</script>")
    with page.expect_response(lambda answer: answer.url == target) as posted:
        page.goto(card_server.url + "/attack")
    answer = posted.value
    assert answer.request.method == "POST" and answer.status == 403
    assert COOKIE in (answer.request.header_value("cookie") or "")
    page.get_by_role("alert").filter(has_text="Cross-site form posts are refused.").wait_for()
    assert peer_sees(caller, task_id) == "input-required"
    assert node.find_event("a2a.task.state_changed", task_id=task_id, state="canceled") is None
    page.goto(f"{node.url}/console/tasks/{task_id}?peer={CALLER}")  # still signed in
    assert page.locator('[data-field="state"]').inner_text() == "input-required"


def test_the_audit_trail_shows_each_change(page: Any, node: LiveNode) -> None:
    page.goto(node.url + "/console/audit")
    trail = page.locator('[data-field="audit"]').inner_text()
    for event in ("admin.peer.created", "admin.peer.replaced", "admin.setting.changed",
                  "admin.peer.deleted"):
        assert event in trail, trail
    assert "hostile-secret" not in page.content()
    shoot(page, "audit")
    page.get_by_label("Event").select_option("admin.setting.changed")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/console/audit?event=admin.setting.changed*")
    filtered = page.locator('[data-field="audit"]').inner_text()
    assert "key: a2a.max_message_parts" in filtered and "admin.peer" not in filtered


def test_no_page_broke_the_content_security_policy(page: Any) -> None:
    assert not [line for line in page.logged if "Content Security Policy" in line]
