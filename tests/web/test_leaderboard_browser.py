"""A dataset's leaderboard in Chromium: the trend chart is drawn with each method's figures and intervals, two points
clicked in it lead to their paired comparison, a "with the run before" link does too, and the page fits 1280 and
1920 px (the axe audit and the clipping check are tests/web/test_accessibility.py's, the chart's labels
tests/web/test_chart_layout.py's)."""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from tests.browser_support import CHROMIUM
from tests.web.test_leaderboard import dialogue_file

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Chromium not found at {CHROMIUM}")

if CHROMIUM.exists():
    from tests.web.test_browser import (  # noqa: F401
        context,
        judge,
        module_context,
        open_page,
        overflowing_cards,
        page,
        server,
        watch,
    )


@pytest.fixture(scope="module")
def runs(server, judge):  # noqa: F811
    """(dataset, r1, r2, r3): three runs of three files over the same sessions, as tests/web/test_leaderboard.py's."""
    judge.latency_s = 0.0
    made = [server.evaluate(server.upload(data, name))["id"] for data, name in (
        (dialogue_file({"A": 50, "B": 40}), "one.jsonl"),
        (dialogue_file({"A": 30, "C": 45, "D": 30}), "two.jsonl"),
        (dialogue_file({"A": 44, "B": 40}, marker="again"), "three.jsonl"))]
    return (server.call(f"/api/evaluations/{made[0]}/dataset")["dataset"], *made)


def drawn_chart(page) -> list[dict]:
    """Wait for Plotly to draw the trend chart; its traces as drawn: name, x, y, run ids, error bars."""
    page.locator("#chart-trend").scroll_into_view_if_needed()
    page.locator("#chart-trend .main-svg").first.wait_for(state="attached")
    return page.evaluate("""() => document.getElementById('chart-trend').data.map(t => ({
        name: t.name, x: t.x, y: t.y, runs: t.customdata, plus: t.error_y.array, minus: t.error_y.arrayminus}))""")


def click_point(page, trace: int, point: int) -> None:
    """Click a point of the chart as a person would, with the mouse."""
    box = page.locator("#chart-trend .scatterlayer .trace").nth(trace).locator("path.point").nth(point).bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def test_the_chart_draws_each_methods_trend_with_its_intervals(page, watch, server, runs):  # noqa: F811
    dataset, r1, r2, r3 = runs
    open_page(page, server, f"/datasets/{dataset}")
    traces = drawn_chart(page)
    # ranked by their latest runs: C 51.5 (r2), A 50.5 (r3), B 46.5 (r3), D 36.5 (r2); x is the run's place
    assert [t["name"] for t in traces] == ["C", "A", "B", "D"]
    by_name = {t["name"]: t for t in traces}
    assert by_name["A"]["x"] == [1, 2, 3] and by_name["A"]["runs"] == [r1, r2, r3]
    assert by_name["A"]["y"] == pytest.approx([56.5, 36.5, 50.5])
    assert by_name["B"]["x"] == [1, 3] and by_name["B"]["y"] == pytest.approx([46.5, 46.5])
    trends = server.call(f"/api/datasets/{dataset}")["trends"]
    for name, trace in by_name.items():
        intervals = [point["ci95"] for point in trends[name]]
        assert trace["plus"] == pytest.approx([high - value for (low, high), value in zip(intervals, trace["y"])])
        assert trace["minus"] == pytest.approx([value - low for (low, high), value in zip(intervals, trace["y"])])
    assert page.locator("#chart-trend .scatterlayer .trace path.point").count() == 7
    assert page.locator("#ranking tbody tr").all_inner_texts()[0].split("\t")[:3] == ["1", "C", "51.5"]
    for width in (1280, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(300)  # Plotly redraws on resize
        assert overflowing_cards(page) == [], width
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), width
    assert watch.errors == []


def test_two_points_clicked_in_the_chart_open_their_paired_comparison(page, server, runs):  # noqa: F811
    dataset, r1, _r2, r3 = runs
    open_page(page, server, f"/datasets/{dataset}")
    drawn_chart(page)
    click_point(page, 1, 2)  # A in r3
    assert page.locator("#point-a option:checked").get_attribute("data-point") == f"A|{r3}"
    page.wait_for_timeout(400)  # a second click sooner would be Plotly's double click (which zooms out)
    click_point(page, 1, 0)  # A in r1
    assert page.locator("#point-b option:checked").get_attribute("data-point") == f"A|{r1}"
    with page.expect_navigation():
        page.locator("#compare-points button[type=submit]").click()
    query = parse_qs(urlsplit(page.url).query)
    assert urlsplit(page.url).path == "/compare" and query == {"ids": [f"{r1},{r3}"], "baseline": [r1]}
    row = page.locator("#paired tbody tr", has=page.locator("th", has_text="A")).filter(has_text="AVG").first
    cells = row.locator("td").all_inner_texts()
    assert "-6" in cells[5]  # A's AVG: 50.5 in r3 against 56.5 in r1


def test_the_link_to_the_run_before_opens_the_paired_comparison(page, server, runs):  # noqa: F811
    dataset, _r1, r2, r3 = runs
    open_page(page, server, f"/datasets/{dataset}")
    row = page.locator("#trend-table tbody tr").filter(has=page.locator("th", has_text="A")).nth(2)
    with page.expect_navigation():
        row.get_by_role("link", name="with the run before").click()
    assert parse_qs(urlsplit(page.url).query) == {"ids": [f"{r2},{r3}"], "baseline": [r2]}
    assert page.locator("#paired").count() == 1
