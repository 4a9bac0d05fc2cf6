"""In the browser (issue 41, item 4): reviewing the unparsed judgments of a filtered, sorted sample grid with the
keyboard only: Tab to "Review these judgments one by one", Enter, then j (next) and k (previous) through them (not
while typing in the review's comment), and back to the grid at the same filter and sort, scrolled to the row of the
judgment last seen. The judgment page passes axe and fits 1280-1920 px (Chromium driven by Playwright against a real
server)."""
from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.browser_support import CHROMIUM, PageWatch, axe_violations, dashboard_server, new_context
from tests.conftest import jsonl, session_line
from tests.judge_server import JudgeServer
from tests.web.test_browser import check_widths, open_page

if not CHROMIUM.exists():
    pytest.skip(f"browser tests need Chromium at {CHROMIUM} (Debian package `chromium`; CI's .ci/run installs it)",
                allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402  (after the skip)

SESSIONS = 12


def _session(i: int) -> dict:
    """Session s01..s12: A's fine score of round 1 is 100 - 7 i; B's reply of round 1 gets an unparseable answer."""
    line = session_line(f"s{i:02d}", 2)
    for k, rnd in enumerate(line["rounds"]):
        score = 100 - 7 * i if k == 0 else 50
        rnd["responses"] = {"A": f"A says {score} [[score={score}]]",
                            "B": "B says 40 [[score=40]]" + (" [[bad]]" if k == 0 else "")}
    return line


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with JudgeServer() as judge, dashboard_server(tmp_path_factory.mktemp("review"), judge.url) as running:
        judge.hook = lambda r: "malformed" if r["mode"] == "fine" and "[[bad]]" in r["reply"] else None
        running.evaluation = running.evaluate(running.upload(jsonl(*(_session(i) for i in range(1, SESSIONS + 1))),
                                                             "review.jsonl"))
        assert running.evaluation["status"] == "done", running.evaluation
        yield running


def tab_to(page, text: str, limit: int = 60) -> None:
    """Press Tab until the link or button with this text has the focus."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("() => (document.activeElement.textContent || '').trim()") == text:
            return
    raise AssertionError(f"{text!r} not reached with Tab")


def test_unparsed_judgments_are_reviewed_with_j_and_k_then_back_to_the_grid(server, tmp_path, browser):
    evaluation = server.evaluation["id"]
    page = new_context(browser).new_page()
    watch = PageWatch(page)
    # B's unparsed fine judgments, the rows sorted by A's fine score, lowest first: s12 (16), s11 (23), ...
    open_page(page, server, f"/evaluations/{evaluation}/view/grid?status=unparsed&sort=fine:A&order=asc")
    expect(page.get_by_text(f"{SESSIONS} rows")).to_be_visible()
    tab_to(page, "Review these judgments one by one (keys j and k)")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    heading, position = page.locator("h1"), page.locator(".review-position")
    for n in range(1, SESSIONS + 1):
        expect(heading).to_have_text(f"Judgment: s{SESSIONS + 1 - n:02d} · round 1 · B · fine")
        expect(position).to_have_text(f"{n} of {SESSIONS}")
        if n < SESSIONS:
            with page.expect_navigation():
                page.keyboard.press("j")
    page.keyboard.press("j")  # the last one: nowhere further
    page.wait_for_timeout(300)
    expect(position).to_have_text(f"{SESSIONS} of {SESSIONS}")
    with page.expect_navigation():
        page.keyboard.press("k")
    expect(heading).to_have_text("Judgment: s02 · round 1 · B · fine")
    # Typed into the review's comment, j and k are letters, not steps.
    tab_to(page, "Save the review")
    page.keyboard.press("Shift+Tab")
    page.keyboard.type("jk")
    page.wait_for_timeout(300)
    assert page.get_by_label("Comment").input_value() == "jk"
    expect(position).to_have_text(f"{SESSIONS - 1} of {SESSIONS}")
    assert axe_violations(page) == []
    check_widths(page, tmp_path, "judgment")
    page.set_viewport_size({"width": 1280, "height": 900})
    tab_to(page, "Back to the grid")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    address = urlsplit(page.url)
    assert address.fragment == "row-1-1"  # s02, round 1
    assert dict(parse_qsl(address.query)) == {"status": "unparsed", "sort": "fine:A", "order": "asc"}
    expect(page.get_by_text(f"{SESSIONS} rows")).to_be_visible()
    row = page.locator("#row-1-1")
    expect(row).to_be_in_viewport()
    assert page.evaluate("window.scrollY") > 0  # the eleventh of twelve rows: scrolled to, below the fold
    assert watch.errors == [] and watch.foreign_requests() == []
