"""In the browser (issue 40, item 1): the owner draws a slice, makes a rating link on the Ask people page and copies
it with its Copy button; a guest, in a browser of their own, rates three replies with the keyboard only (digits typed
into the dimensions' number fields, Tab, a digit for the yes/no question, Enter), skips with S, goes back with B and
with Backspace and finds the saved rating; the ratings kept are those typed, and the owner sees the guest's progress.
The rating and Ask people pages pass axe and fit 1280-1920 px (Chromium driven by Playwright against a real
server)."""
from __future__ import annotations

import pytest

from kinds import registry
from kinds.dialogue import rating_slice, rating_store
from storage.store import Store
from tests.browser_support import CHROMIUM, PageWatch, axe_violations, dashboard_server, new_context
from tests.conftest import jsonl
from tests.judge_server import JudgeServer
from tests.kinds.dialogue.test_rating_pages import session
from tests.web.test_browser import check_widths, open_page

if not CHROMIUM.exists():
    pytest.skip(f"browser tests need Chromium at {CHROMIUM} (Debian package `chromium`; CI's .ci/run installs it)",
                allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402  (after the skip)

DIMENSIONS = ("style", "content", "naturalness", "personalization", "conversation")
# What the guest types for the first, second and third reply they rate: five dimensions 0-20, then 1 (yes) or 0 (no).
TYPED = [([12, 15, 9, 20, 7], 1), ([3, 0, 18, 11, 6], 0), ([16, 16, 16, 16, 4], 1)]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with JudgeServer() as judge, dashboard_server(tmp_path_factory.mktemp("rating"), judge.url) as running:
        yield running


@pytest.fixture(scope="module")
def evaluation(server) -> str:
    body = server.evaluate(server.upload(jsonl(*(session(i) for i in range(6))), "rated.jsonl"))
    assert body["status"] == "done", body
    return body["id"]


def store_of(server) -> Store:
    return Store(server.config["DATABASE"], registry.tables())


def rate_by_keyboard(page, dims: list[int], verdict: int) -> None:
    page.wait_for_function("() => document.activeElement && document.activeElement.name === 'dim-style'")
    for value in dims:
        page.keyboard.type(str(value))
        page.keyboard.press("Tab")
    page.keyboard.press(str(verdict))  # picks the answer, then the Save button has the focus
    assert page.evaluate("document.activeElement.type") == "submit"
    with page.expect_navigation():
        page.keyboard.press("Enter")


def test_a_guest_rates_three_replies_with_the_keyboard(server, evaluation, tmp_path, browser):
    owner_context = new_context(browser)
    owner_context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    owner = owner_context.new_page()
    open_page(owner, server, f"/evaluations/{evaluation}")
    owner.locator("#ask-people").get_by_role("link", name="Ask people").click()
    owner.get_by_label("Replies to rate").fill("8")
    owner.get_by_label("Seed").fill("5")
    owner.get_by_role("button", name="Draw the slice").click()
    expect(owner.locator("#slice")).to_contain_text("The slice holds 8 replies (seed 5)")
    owner.get_by_label("Rater's name").fill("guest")
    owner.get_by_role("button", name="Create a rating link").click()
    link = owner.get_by_label("Rating link").input_value()
    assert link.startswith(f"{server.url}/rate/")
    owner.get_by_role("button", name="Copy").click()
    expect(owner.get_by_role("button", name="Copied")).to_be_visible()
    assert owner.evaluate("navigator.clipboard.readText()") == link
    items = rating_slice.slice_of(store_of(server), evaluation)["items"]

    context = new_context(browser)
    page = context.new_page()
    watch = PageWatch(page)
    page.goto(link)
    page.get_by_role("link", name="Rate the next reply you have not rated").click()
    expect(page.locator("h1")).to_have_text("Reply 1 of 8")
    rate_by_keyboard(page, *TYPED[0])
    expect(page.locator("h1")).to_have_text("Reply 2 of 8")
    with page.expect_navigation():
        page.keyboard.press("s")  # skip: nothing saved
    expect(page.locator("h1")).to_have_text("Reply 3 of 8")
    with page.expect_navigation():
        page.keyboard.press("b")
    expect(page.locator("h1")).to_have_text("Reply 2 of 8")
    rate_by_keyboard(page, *TYPED[1])
    expect(page.locator("h1")).to_have_text("Reply 3 of 8")
    assert axe_violations(page) == []
    check_widths(page, tmp_path, "rate")
    page.set_viewport_size({"width": 1280, "height": 900})
    rate_by_keyboard(page, *TYPED[2])
    expect(page.locator("h1")).to_have_text("Reply 4 of 8")
    # Backspace outside a number field goes back, to the saved rating
    page.wait_for_function("() => document.activeElement && document.activeElement.name === 'dim-style'")
    for _ in DIMENSIONS:
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.name") == "binary"
    with page.expect_navigation():
        page.keyboard.press("Backspace")
    expect(page.locator("h1")).to_have_text("Reply 3 of 8")
    dims, verdict = TYPED[2]
    for key, value in zip(DIMENSIONS, dims):
        assert page.locator(f"input[name=dim-{key}]").input_value() == str(value)
    assert page.locator(f"input[name=binary][value='{verdict}']").is_checked()
    expect(page.get_by_text("Your saved rating is filled in")).to_be_visible()
    assert watch.errors == [] and watch.foreign_requests() == []

    kept = rating_store.people_ratings(store_of(server), evaluation, "guest")
    by_reply = {(r["session_id"], r["round"], r["method"]): r for r in kept}
    assert set(by_reply) == set(items[:3])
    for item, (dims, verdict) in zip(items[:3], TYPED):
        row = by_reply[item]
        assert [row[key] for key in DIMENSIONS] == dims and row["verdict"] == verdict
        assert row["total"] == sum(dims) and row["source"] == "browser"  # the default rubric sums them

    owner.reload()
    rows = owner.locator("#progress tbody tr").all()
    assert [row.inner_text().split("\t") for row in rows] == [["guest", "3", "8"]]
    assert axe_violations(owner) == []
    check_widths(owner, tmp_path, "ask-people")
