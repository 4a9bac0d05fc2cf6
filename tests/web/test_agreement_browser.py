"""In the browser (issue 40, item 3): the owner attaches two people's ratings with the result page's Agreement with
people form; the card then shows Spearman, Pearson and Kendall side by side, the methods' tau with its interval and
alpha among people, and draws the judge-vs-people scatter (one trace per method, each point a reply at the judge's
total and people's mean, error bars spanning the raters' lowest to highest total) with the numbers of the API's
result; while a rescore job is asked for and not over, the card says the figures are being updated and the page
reloads itself once it is. Axe finds nothing, no card overflows at 1280-1920 px; screenshots of the card are kept
(SCREENSHOT_DIR copies them out). Chromium driven by Playwright against a real server."""
from __future__ import annotations

import os
import shutil

import pytest

from kinds import registry
from storage.database import now
from storage.store import Store
from tests.browser_support import CHROMIUM, PageWatch, axe_violations, dashboard_server, new_context
from tests.conftest import jsonl
from tests.judge_server import JudgeServer
from tests.web.test_browser import check_widths, open_page, wait_for_chart

if not CHROMIUM.exists():
    pytest.skip(f"browser tests need Chromium at {CHROMIUM} (Debian package `chromium`; CI's .ci/run installs it)",
                allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402  (after the skip)

METHODS = ("Steered", "Plain", "Other")


def judged(i: int, k: int) -> dict[str, int]:
    """The total the local judge gives each method's reply in session i, round k (its marker's)."""
    return {"Steered": 40 + 7 * i + 4 * k, "Plain": 75 - 6 * i - 3 * k, "Other": 55 + 3 * ((i + k) % 4)}


def session(i: int) -> dict:
    """Session s<i>, three rounds; the local judge gives each reply the total its marker names."""
    return {"session_id": f"s{i}", "user_profile": f"Profile {i}: a nurse who runs marathons.",
            "user_personality": "Cheerful.",
            "rounds": [{"round": k, "user_message": f"question {k}",
                        "responses": {m: f"{m} says {i}.{k} [[score={total}]]" for m, total in judged(i, k).items()}}
                       for k in (1, 2, 3)]}


def ratings_file() -> bytes:
    """alice rates every reply near the judge, bob the replies of the first three sessions his own way."""
    rows = ["rater,session_id,round,method,total"]
    for i in range(5):
        for k in (1, 2, 3):
            for method, total in judged(i, k).items():
                rows.append(f"alice,s{i},{k},{method},{min(100, total + (i * k) % 5)}")
                if i < 3:
                    rows.append(f"bob,s{i},{k},{method},{(total * 3 + 17 * k) % 90 + 5}")
    return ("\n".join(rows) + "\n").encode()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with JudgeServer() as judge, dashboard_server(tmp_path_factory.mktemp("agreement"), judge.url) as running:
        yield running


def test_the_agreement_card_with_two_raters_and_its_scatter(server, tmp_path, browser):
    body = server.evaluate(server.upload(jsonl(*(session(i) for i in range(5))), "steered.jsonl"))
    assert body["status"] == "done", body
    evaluation_id = body["id"]
    page = new_context(browser).new_page()
    watch = PageWatch(page)
    open_page(page, server, f"/evaluations/{evaluation_id}")
    card = page.locator("#human")
    card.locator("input[name=file]").set_input_files({"name": "people.csv", "mimeType": "text/csv",
                                                      "buffer": ratings_file()})
    with page.expect_navigation():
        card.get_by_role("button", name="Attach").click()
    assert page.url.endswith(f"/evaluations/{evaluation_id}#human")
    # once the rescore job is over (the page reloads itself if it was not yet), the figures are there
    expect(page.locator("#people-alpha")).to_be_visible(timeout=30_000)
    human = server.call(f"/api/evaluations/{evaluation_id}")["result"]["agreement"]["human"]
    judge = human["by_rater"]["judge-test"]["total"]
    header = [cell.inner_text() for cell in card.locator("table").first.locator("thead th").all()]
    assert header == ["Judge", "Score", "Spearman ρ / Cohen's κ", "Pearson r", "Kendall τ",
                      "Krippendorff's alpha", "Replies"]
    row = card.locator("table").first.locator("tbody tr").first.inner_text().split("\t")
    assert row[:2] == ["judge-test", "Fine score"]
    for cell, name in zip(row[2:6], ("spearman", "pearson", "kendall", "alpha")):
        figure = judge[name]
        assert f"{figure['value']:.2f} [{figure['low']:.2f}, {figure['high']:.2f}]" in cell, (name, cell)
    alpha = human["people"]["total"]
    assert card.locator("#people-alpha tbody tr").first.inner_text().split("\t") == [
        "Fine score", f"{alpha['value']:.2f} [{alpha['low']:.2f}, {alpha['high']:.2f}]", "27"]
    tau = human["ranking"]["kendall_tau_interval"]["judge-test"]
    assert f"[{tau['low']:.2f}, {tau['high']:.2f}]" in card.locator("table").nth(1).inner_text()

    wait_for_chart(page, "#chart-people")
    drawn = page.evaluate("""() => document.getElementById('chart-people').data.map(t => ({
        name: t.name, x: t.x, y: t.y, plus: t.error_y && t.error_y.array,
        minus: t.error_y && t.error_y.arrayminus}))""")
    points = human["scatter"]["points"]
    assert [t["name"] for t in drawn] == ["Judge = people", *METHODS]
    for trace in drawn[1:]:
        mine = [p for p in points if p["method"] == trace["name"]]
        assert len(mine) == 15
        assert trace["x"] == [p["judge"] for p in mine] and trace["y"] == [p["people"] for p in mine]
        assert trace["plus"] == pytest.approx([p["high"] - p["people"] for p in mine])
        assert trace["minus"] == pytest.approx([p["people"] - p["low"] for p in mine])
    assert sum(p["raters"] == 2 for p in points) == 27  # bob's replies: a bar each
    assert axe_violations(page) == []
    card.screenshot(path=str(tmp_path / "agreement-card.png"))
    check_widths(page, tmp_path, "agreement")

    # asked to be scored again and not over yet: the card says so, and the page follows the job
    store = Store(server.config["DATABASE"], registry.tables())
    store.set_setting(f"rescore:{evaluation_id}", {"token": "browser", "at": now()})
    page.reload()
    notice = page.locator("#rescoring")
    expect(notice).to_have_text("The figures are being updated with people's ratings as they are now; this "
                                "page reloads when they are ready.")
    card.screenshot(path=str(tmp_path / "agreement-card-updating.png"))
    with page.expect_event("load", timeout=15_000):  # the job's end, seen by the page's poll
        store.set_setting(f"rescored:{evaluation_id}",
                          {"status": "done", "token": "browser", "scored": "browser", "at": now()})
    expect(notice).to_have_count(0)
    store.close()
    assert watch.errors == [] and watch.foreign_requests() == []
    if os.environ.get("SCREENSHOT_DIR"):
        shutil.copytree(tmp_path, os.environ["SCREENSHOT_DIR"], dirs_exist_ok=True)
