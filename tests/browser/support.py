"""Driving Debian's Chromium through Playwright (its own browser download is not used)."""

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from django.db import connections
from playwright.sync_api import Browser, Page, expect, sync_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
T = TypeVar("T")
# Screenshots, kept by CI as artifacts: `test-artifacts/` (gitignored) unless TEST_ARTIFACTS says
# where; `.ci/run` prints the place.
ARTIFACTS = Path(
    os.environ.get("TEST_ARTIFACTS") or Path(__file__).resolve().parents[2] / "test-artifacts"
)

expect.set_options(timeout=20_000)


def chromium_missing() -> str | None:
    """What to tell someone whose machine lacks the browser, in one line (read when the tests
    are collected: `make test` stops with it instead of each browser test's stack trace)."""
    if os.access(CHROMIUM, os.X_OK):
        return None
    return (
        f"The browser tests (marked 'browser') need Debian's Chromium at {CHROMIUM}, which is "
        f"missing: install it (apt-get install chromium), or leave them out: "
        f"make test PYTEST_ARGS=\"-m 'not browser'\""
    )


@contextmanager
def chromium() -> Iterator[Browser]:
    """Headless Chromium. Django's ORM refuses to run while Playwright's event loop does, so
    tests touch the database before entering this block and after leaving it."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def signed_in_page(browser: Browser, base_url: str, username: str) -> Page:
    """A fresh browser context (its own cookies) signed in through the login page."""
    page = browser.new_context(
        base_url=base_url, viewport={"width": 1440, "height": 900}
    ).new_page()
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("pw-" + username)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{base_url}/campaigns/")
    return page


def open_table(page: Page, campaign_id: Any) -> None:
    """The campaign page, once its live connection is open."""
    page.goto(f"/campaigns/{campaign_id}/")
    expect(page.locator("#live")).to_have_attribute("data-state", "open")


def at_the_table(browser: Browser, base_url: str, campaign_id: Any, *usernames: str) -> list[Page]:
    """A signed-in page per username, each on the campaign page with its live connection open."""
    pages = [signed_in_page(browser, base_url, username) for username in usernames]
    for page in pages:
        open_table(page, campaign_id)
    return pages


def screenshot(page: Page, name: str) -> Path:
    path = ARTIFACTS / name
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=path, full_page=True)
    return path


def outside_the_browser_loop(work: Callable[[], T]) -> T:
    """Run database work while Chromium is open: on a thread of its own, where Playwright's
    event loop is not running, closing that thread's connections afterwards."""

    def run() -> T:
        try:
            return work()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()
