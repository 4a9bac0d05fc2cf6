"""In the browser, a result judged under a lab's own rubric: the radar of its three dimensions, the bar chart of a
one-dimension rubric and its note in place of BAR(k), each page passing axe (Chromium driven by Playwright against
a real server, as tests/web/test_browser.py)."""
from __future__ import annotations

import json
import time

import pytest

from kinds import registry, rubrics
from kinds.dialogue import rubric_store
from storage.store import Store
from tests.browser_support import CHROMIUM, PageWatch, axe_violations, dashboard_server, new_context
from tests.judge_server import JudgeServer
from tests.kinds.dialogue import rubric_cases as cases
from tests.kinds.dialogue.test_rubric_results import one_file, three_file
from tests.web.test_browser import check_widths, open_page, wait_for_chart

if not CHROMIUM.exists():
    pytest.skip(f"browser tests need Chromium at {CHROMIUM} (Debian package `chromium`; CI's .ci/run installs it)",
                allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402  (after the skip)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A dashboard judged by the local judge, with the two rubrics kept in its store (as the rubric pages will)."""
    with JudgeServer() as judge, dashboard_server(tmp_path_factory.mktemp("rubrics"), judge.url) as running:
        store = Store(running.config["DATABASE"], registry.tables())
        for text in (cases.THREE, cases.ONE):
            rubric_store.add(store, rubrics.read(text))
        yield running


@pytest.fixture(scope="module")
def evaluations(server) -> dict[str, str]:
    def run(data: bytes, rubric: str) -> str:
        created = server.call("/api/evaluations", json.dumps({"upload_id": server.upload(data), "rubric": rubric})
                              .encode(), {"Content-Type": "application/json"})
        while (body := server.call(f"/api/evaluations/{created['id']}"))["status"] in ("queued", "running"):
            time.sleep(0.1)
        assert body["status"] == "done", body
        return body["id"]

    return {"three": run(three_file(), "lab-three"),
            "one": run(one_file({"s1": {"A": [8, 6], "B": [3, 5]}}), "lab-one")}


@pytest.fixture
def page(browser):
    return new_context(browser).new_page()


def test_the_result_page_draws_a_radar_of_the_rubrics_three_dimensions(page, server, evaluations, tmp_path):
    watch = PageWatch(page)
    open_page(page, server, f"/evaluations/{evaluations['three']}")
    wait_for_chart(page, "#chart-radar")
    axes = page.locator("#chart-radar .angularaxistick text")
    expect(axes).to_have_count(3)
    assert axes.all_text_contents() == ["Consistency", "Warmth", "Helpfulness"]
    wait_for_chart(page, "#chart-binary")
    expect(page.locator("#chart-binary .gtitle")).to_have_text("BAR(k): share of yes to Would recommend?")
    expect(page.locator("dl.facts").first).to_contain_text("Consistency (1-7), Warmth (1-7), Helpfulness (1-7)")
    assert axe_violations(page) == []
    check_widths(page, tmp_path, "rubric-three")
    assert watch.errors == [], watch.errors


def test_one_dimension_is_drawn_as_bars_and_no_yes_no_question_as_a_note(page, server, evaluations, tmp_path):
    watch = PageWatch(page)
    open_page(page, server, f"/evaluations/{evaluations['one']}")
    wait_for_chart(page, "#chart-radar")
    expect(page.locator("#chart-radar .barlayer .point")).to_have_count(2)  # A and B, one bar each
    expect(page.locator("#chart-binary")).to_contain_text("No yes/no question: the rubric Lab one 1")
    assert page.locator("#chart-binary .main-svg").count() == 0
    assert axe_violations(page) == []
    check_widths(page, tmp_path, "rubric-one")
    assert watch.errors == [], watch.errors
