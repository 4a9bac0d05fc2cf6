"""A real browser signs in to a dashboard with accounts on (Chromium driven by Playwright, as in test_browser.py)."""
from __future__ import annotations

import pytest

from storage.store import Store
from tests.browser_support import CHROMIUM, DashboardServer, PageWatch, new_context
from web import accounts

if not CHROMIUM.exists():
    pytest.skip(f"browser tests need Chromium at {CHROMIUM} (Debian package `chromium`)", allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402  (after the skip)

PASSWORD = "correct horse battery"


def test_sign_in_through_the_form_lands_on_the_upload_page(tmp_path, browser):
    folder = tmp_path / "server"
    folder.mkdir()
    accounts.create_user(Store(folder / "db.sqlite"), "alice", PASSWORD, is_admin=True)
    server = DashboardServer(folder, "http://127.0.0.1:9/v1")  # no judging here: nothing listens there
    server.config["AUTH"] = "on"
    server.start()
    try:
        page = new_context(browser).new_page()
        page.set_default_timeout(20_000)
        watch = PageWatch(page)
        page.goto(server.url + "/")
        expect(page).to_have_url(f"{server.url}/login?next=/")
        page.locator("input[name=name]").fill("alice")
        page.locator("input[name=password]").fill("not the password")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_have_text("Wrong user name or password.")
        page.locator("input[name=password]").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(f"{server.url}/")
        expect(page.locator("form.upload-form")).to_be_visible()
        expect(page.locator(".topbar .account a")).to_have_text("alice")
        page.get_by_role("button", name="Sign out").click()
        expect(page).to_have_url(f"{server.url}/login")
        assert watch.errors == [] and watch.foreign_requests() == []
    finally:
        server.stop()
