"""The Run page and the status page in Chromium: fill the form, estimate, run, follow the run to its file; axe-core
finds no serious violation on either page. Their screenshots go to the test's temporary folder;
`python -m tests.web.test_browser --screenshots` writes them to docs/screenshots/ (see `run_a_simulation`)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.browser_support import CHROMIUM, SAMPLE, PageWatch, axe_violations

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Chromium not found at {CHROMIUM}")

if CHROMIUM.exists():
    from playwright.sync_api import expect

    from tests.browser_support import dashboard_server, new_context


def run_a_simulation(page, server, shots: Path) -> None:
    """Fill the Run page with the sample's personas, two methods and two rounds, estimate, start, and follow the run
    to its end, checking each page with axe-core; simulation-run.png and simulation-status.png go to `shots`. The
    server's judge must play the models (tests/simulate/support.py's Recorder)."""
    upload_id = server.upload(SAMPLE.read_bytes(), "personas-from-sessions.jsonl")
    page.goto(server.url + "/simulations/new")
    page.select_option("select[name=personas]", upload_id)
    page.fill("input[name=simulator-model]", "sim-model")
    for row, (name, model) in enumerate((("Base", "model-a"), ("Ours", "model-b"))):
        page.fill(f"input[name=method-{row}-name]", name)
        page.fill(f"input[name=method-{row}-model]", model)
    page.fill("textarea[name=method-1-system_prompt]", "You adapt to the user.")
    page.fill("input[name=rounds]", "2")
    page.click("button[value=estimate]")
    expect(page.locator("#estimate")).to_contain_text("48 calls to the models.")  # 8 personas x 2 rounds x (1 + 2)
    page.screenshot(path=str(shots / "simulation-run.png"), full_page=True)
    assert axe_violations(page) == []

    page.click("button[value=start]")
    page.wait_for_url(re.compile(r"/simulations/\w+$"))
    expect(page.locator(".status-done")).to_be_visible(timeout=60_000)  # the page reloads itself until then
    expect(page.locator("main")).to_contain_text("48 of 48 turns")
    expect(page.locator("details.transcript").first).to_contain_text("Round 2")
    page.screenshot(path=str(shots / "simulation-status.png"), full_page=True)
    assert axe_violations(page) == []


def test_run_a_simulation_from_the_page(tmp_path, judge_server, browser):
    from tests.simulate.support import Recorder

    Recorder(judge_server)
    with dashboard_server(tmp_path / "dashboard", judge_server.url) as server:
        context = new_context(browser)
        context.set_default_timeout(20_000)
        page = context.new_page()
        watch = PageWatch(page)
        run_a_simulation(page, server, tmp_path)
        assert watch.errors == [] and watch.foreign_requests() == []
        context.close()


def test_transcripts_opened_stay_open_while_the_page_reloads(tmp_path, judge_server, browser):
    from tests.simulate.support import Recorder

    Recorder(judge_server)
    judge_server.latency_s = 0.3  # slow enough for the page to reload a few times while it runs
    with dashboard_server(tmp_path / "dashboard", judge_server.url) as server:
        upload_id = server.upload(SAMPLE.read_bytes(), "personas-from-sessions.jsonl")
        started = server.call("/api/simulations", json.dumps({
            "personas_upload_id": upload_id, "simulator": {"model": "sim-model"}, "rounds": 6,
            "methods": [{"name": "A", "model": "model-a"}]}).encode(), {"Content-Type": "application/json"})
        context = new_context(browser)
        page = context.new_page()
        watch = PageWatch(page)
        page.goto(f"{server.url}/simulations/{started['id']}")
        expect(page.locator("details.transcript").nth(1)).to_be_attached(timeout=20_000)  # the page reloads itself
        page.locator("details.transcript summary").nth(1).click()  # open the second, close the first
        page.locator("details.transcript summary").nth(0).click()
        with page.expect_navigation(timeout=10_000):
            pass  # the next reload
        expect(page.locator("details.transcript").nth(1)).to_have_attribute("open", "")
        expect(page.locator("details.transcript").nth(0)).not_to_have_attribute("open", "")
        assert watch.errors == []
        context.close()


def test_the_sample_grid_follows_the_run_in_the_browser(tmp_path, judge_server, browser):
    from tests.simulate.support import Recorder

    Recorder(judge_server)
    judge_server.latency_s = 0.3  # slow enough for the page to reload a few times while it runs
    with dashboard_server(tmp_path / "dashboard", judge_server.url) as server:
        upload_id = server.upload(SAMPLE.read_bytes(), "personas-from-sessions.jsonl")
        started = server.call("/api/simulations", json.dumps({
            "personas_upload_id": upload_id, "simulator": {"model": "sim-model"}, "rounds": 4,
            "methods": [{"name": "A", "model": "model-a"}, {"name": "B", "model": "model-b"}]}).encode(),
            {"Content-Type": "application/json"})
        context = new_context(browser)
        page = context.new_page()
        watch = PageWatch(page)
        page.goto(f"{server.url}/simulations/{started['id']}")
        page.get_by_role("link", name="Read them side by side in the sample grid").click()
        rows = page.locator("#samples-grid tbody tr")
        expect(rows.first).to_be_attached(timeout=20_000)  # the page reloads itself until the first round begins
        expect(page.locator("#simulation")).to_have_attribute("data-refresh", "3000")
        assert axe_violations(page) == []
        before = rows.count()
        expect(rows).not_to_have_count(before, timeout=20_000)  # later rounds arrive with the reloads
        expect(page.locator(".status-done")).to_be_visible(timeout=60_000)
        expect(rows).to_have_count(8 * 4)  # 8 personas x 4 rounds
        expect(page.locator("#samples-grid")).not_to_contain_text("no answer yet")
        assert axe_violations(page) == []
        assert watch.errors == [] and watch.foreign_requests() == []
        context.close()
