"""Headless Chromium from the system's packages (`/usr/bin/chromium`), driven by Playwright:
one browser per test module, one page reused across its tests. Nothing downloads a browser.
Without Chromium the tests skip, and fail in CI (`CI=true`), which installs it (.ci/run).

Screenshots go to artifacts/console/ (git-ignored; CI keeps them as artifacts)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("SYNTHORG_CHROMIUM", "/usr/bin/chromium"))
SHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "console"
WIDE = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}: CI runs the browser tests, never skips them", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed")
    if not CHROMIUM.exists():
        _unavailable(f"no Chromium at {CHROMIUM}")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                             args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def shoot(page: Any, name: str) -> None:
    """A screenshot of the page at 1280x800 and at phone width."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^a-z0-9-]", "-", name.lower())
    for label, size in (("wide", WIDE), ("phone", PHONE)):
        page.set_viewport_size(size)
        page.screenshot(path=str(SHOTS / f"{safe}-{label}.png"), full_page=True)
    page.set_viewport_size(WIDE)


@pytest.fixture(scope="module")
def page(chromium: Any) -> Iterator[Any]:
    """One page for the module; every console message it logs is kept in `page.logged`
    (a CSP violation shows there)."""
    context = chromium.new_context(viewport=WIDE)
    tab = context.new_page()
    tab.logged = []
    tab.on("console", lambda message: tab.logged.append(message.text))
    tab.on("pageerror", lambda error: tab.logged.append(str(error)))
    tab.set_default_timeout(20_000)
    yield tab
    context.close()
