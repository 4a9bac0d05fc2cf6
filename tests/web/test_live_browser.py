"""The live view in a real browser: while the local judge answers slowly, a running evaluation's result page fills in
its methods table, AL(k) and yes/no curves without a reload, marked partial, with the numbers of the judgments
stored at that moment (computed here by hand from the server's store); at the end it shows the final figures.

The judge is held by test_live_results.Gate between two moments, so that what is stored stays put while the page is
read. The server runs as in tests/web/test_browser.py (a subprocess), with a judge timeout longer than the holds.
"""
from __future__ import annotations

import json

import pytest
from babel.numbers import format_decimal

from tests.browser_support import CHROMIUM, DashboardServer, new_context
from tests.judge_server import JudgeServer
from tests.web.test_live_results import METHODS, TOTAL, Gate, answer_then_hold, by_hand, scored_file, settled

if not CHROMIUM.exists():
    pytest.skip(f"browser tests need Chromium at {CHROMIUM} (Debian package `chromium`)", allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402  (after the skip)

WAIT_MS = 30_000


@pytest.fixture(scope="module")
def live_judge():
    """The local judge, answering slowly (0.15 s)."""
    with JudgeServer(latency_s=0.15) as server:
        yield server


@pytest.fixture(scope="module")
def live_server(tmp_path_factory, live_judge):
    """The dashboard in a subprocess; its judge calls wait as long as a test holds the judge."""
    server = DashboardServer(tmp_path_factory.mktemp("live"), live_judge.url)
    server.env["JUDGE_TIMEOUT_S"] = "120"
    server.start()
    try:
        yield server
    finally:
        server.stop()


def server_store(server):
    from kinds import registry
    from storage.store import Store

    return Store(server.config["DATABASE"], registry.tables())


def start_held(server, judge, marker: str) -> tuple[str, Gate]:
    """An evaluation started through the API, its judge held until the test lets it answer."""
    gate = Gate(marker)
    judge.hook = gate
    upload_id = server.upload(scored_file(marker), "live.jsonl")
    created = server.call("/api/evaluations", json.dumps({"upload_id": upload_id}).encode(),
                          {"Content-Type": "application/json"})
    return created["id"], gate


def shown_avg(page) -> dict[str, str]:
    """The AVG cell of each method's row in the live methods table, as shown."""
    rows = page.locator("#live table.metrics tbody tr")
    return {rows.nth(i).locator("th").inner_text().strip(): rows.nth(i).locator("td").first.inner_text().strip()
            for i in range(rows.count())}


def expected_avg(figures: dict) -> dict[str, str]:
    return {m: "—" if figures[m]["avg"] is None else format_decimal(figures[m]["avg"], format="#,##0.0", locale="en")
            for m in METHODS}


def test_the_result_page_fills_in_while_the_judge_answers_then_shows_the_final_figures(browser, live_server,
                                                                                         live_judge):
    store = server_store(live_server)
    evaluation_id, gate = start_held(live_server, live_judge, "[[browser]]")
    context = new_context(browser)
    context.set_default_timeout(WAIT_MS)
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{live_server.url}/evaluations/{evaluation_id}")
        expect(page.locator("#live #live-n")).to_contain_text("No judgment is stored yet")
        expect(page.locator("#progress progress")).to_be_visible()
        page.evaluate("window.__notReloaded = true")
        for more in (12, 24):  # two moments, the judge held at each
            answered = answer_then_hold(gate, more)
            done = settled(store, evaluation_id)
            assert 0 < done <= answered
            figures = by_hand(store.judgments(evaluation_id))
            n = sum(f["judged_fine"] + f["judged_binary"] for f in figures.values())
            expect(page.locator("#live-n-methods")).to_contain_text(f"n = {n} valid judgments", timeout=WAIT_MS)
            expect(page.locator("#live-n")).to_contain_text(f"from the {done} of {TOTAL} judgments")
            expect(page.locator("#live .status-partial")).to_have_text("partial")
            assert shown_avg(page) == expected_avg(figures)
            expect(page.locator("#live-n-al")).to_contain_text(
                f"n = {sum(f['judged_fine'] for f in figures.values())} fine judgments")
            expect(page.locator("#live-chart-al .main-svg").first).to_be_attached()  # drawn by Plotly
            expect(page.locator("#live-chart-binary .main-svg").first).to_be_attached()
            assert page.evaluate("window.__notReloaded") is True  # filled in, not reloaded
            expect(page.locator("form[action$='/cancel'] button")).to_be_visible()  # Cancel stays
        # a finished sample opens in the grid while the run goes on
        grid = context.new_page()
        grid.goto(page.locator("#live a[href$='/view/grid']").get_attribute("href").join([live_server.url, ""]))
        expect(grid.locator("#samples-grid")).to_be_visible()
        grid.close()
        gate.open()
        expect(page.locator("#status")).to_have_text("done", timeout=60_000)
        final = live_server.call(f"/api/evaluations/{evaluation_id}")
        assert final["status"] == "done"
        expect(page.locator(".status-partial")).to_have_count(0)
        rows = page.locator("table.metrics").first.locator("tbody tr")
        shown = {rows.nth(i).locator("th").inner_text().strip(): rows.nth(i).locator("td").first.inner_text().strip()
                 for i in range(rows.count())}
        assert shown == {m: format_decimal(final["result"]["methods"][m]["avg"], format="#,##0.0", locale="en")
                         for m in METHODS}
        assert shown == expected_avg(by_hand(store.judgments(evaluation_id)))
        assert not errors, errors
    finally:
        gate.open()
        context.close()
        store.close()
