"""The operator console in headless Chromium against a live node: signing in and out, a
wrong token, every page, and that nothing a peer wrote runs as script."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from synthorg.admin.token import TOKEN_ENV
from tests.browser.conftest import shoot
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


def test_no_page_broke_the_content_security_policy(page: Any) -> None:
    assert not [line for line in page.logged if "Content Security Policy" in line]
