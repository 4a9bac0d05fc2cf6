"""Every chart of every kind's result and compare pages, and of a dialogue dataset's leaderboard, drawn in Chromium
at 1280, 1440 and 1920 px: no label cut at the chart's edge, no legend over the x axis's title or tick labels, no legend that scrolls (also after the
window is resized), and no radar tick label over the radial axis's."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser_support import CHROMIUM, tab
from tests.conftest import jsonl, session_line

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Chromium not found at {CHROMIUM}")

if CHROMIUM.exists():
    from tests.web.test_accessibility import _conversation_upload, _finished
    from tests.web.test_browser import judge, mobility_evaluation, server  # noqa: F401

PROBE = (Path(__file__).with_name("chart_probe.js")).read_text("utf-8")
WIDTHS = (1280, 1440, 1920)
# Long and CJK method names: the legend and the tables must make room for them.
METHODS = ("Base", "Chain-of-Thought prompting", "RAG", "PersonaSteer (ours)", "个性化助手", "ALOE-7B-Instruct")


@pytest.fixture(scope="module")
def chart_pages(server, judge) -> dict[str, str]:  # noqa: F811
    """A result and a compare page of every kind whose data is here."""
    from tests.kinds.agentbench.test_agentbench_pipeline import outputs_zip

    six = jsonl(*(session_line(f"s{i}", rounds=10, methods=METHODS) for i in range(6)))
    dialogue = [server.evaluate(server.upload(six, f"six-{n}.jsonl"))["id"] for n in (1, 2)]
    agentbench = [server.evaluate(server.upload(outputs_zip(), f"outputs-{n}.zip"))["id"] for n in (1, 2)]
    dataset = server.call(f"/api/evaluations/{dialogue[0]}/dataset")["dataset"]  # both runs: the same sessions
    found = {"dialogue result": f"/evaluations/{dialogue[0]}",
             "dialogue compare": f"/compare?ids={dialogue[0]}&ids={dialogue[1]}",
             "dialogue leaderboard": f"/datasets/{dataset}",
             "agentbench result": f"/evaluations/{agentbench[0]}",
             "agentbench compare": f"/compare?ids={agentbench[0]}&ids={agentbench[1]}"}
    mobility = mobility_evaluation(server)
    if mobility:
        other = _finished(server, mobility_evaluation(server))  # the same reference set, uploaded again
        found["mobility result"] = f"/evaluations/{_finished(server, mobility)}"
        found["mobility compare"] = f"/compare?ids={mobility}&ids={other}"

    conversation = _conversation_upload()
    if conversation:
        found["conversation result"] = f"/evaluations/{server.evaluate(server.upload(*conversation))['id']}"
    return found


@pytest.fixture(scope="module")
def window(browser):
    """One browser context for the module's pages (they need no state of their own)."""
    context = browser.new_context(viewport={"width": WIDTHS[0], "height": 900})
    yield context
    context.close()


def chart_problems(page) -> list[str]:
    """Draw every chart of the page (scrolling each into view) and return what the probe finds wrong."""
    problems = []
    for chart in page.locator("[data-figure]").all():
        chart.scroll_into_view_if_needed()
        chart.locator("svg.main-svg").first.wait_for(state="attached")
        problems += chart.evaluate(PROBE)
    return problems


@pytest.mark.parametrize("name", ["dialogue result", "dialogue compare", "dialogue leaderboard", "agentbench result",
                                  "agentbench compare", "mobility result", "mobility compare", "conversation result"])
def test_charts_fit_and_nothing_covers_their_labels(window, server, chart_pages, name):  # noqa: F811
    if name not in chart_pages:
        pytest.skip("its sample data (DailyMobility, Human-vs-Agent) is not in ../shared/data")
    page = tab(window)
    page.goto(server.url + chart_pages[name])
    found = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(300)  # Plotly redraws responsive charts on the resize event
        found += [f"{width} px: {p}" for p in chart_problems(page)]
    page.set_viewport_size({"width": WIDTHS[0], "height": 900})  # shrunk back after a wide window
    page.wait_for_timeout(300)
    found += [f"back to {WIDTHS[0]} px: {p}" for p in chart_problems(page)]
    assert not found, f"{name} ({chart_pages[name]}):\n" + "\n".join(dict.fromkeys(found))


def test_the_six_method_radar_is_outlines_with_a_labelled_legend_that_toggles_each_method(window, server,  # noqa: F811
                                                                                          chart_pages):
    """Six methods on the dimensions' radar: each an outline (the probe above fails a filled one), the legend below
    it titled with what a click does, and a click on a method's entry hides its outline, a second shows it again."""
    page = tab(window)
    page.goto(server.url + chart_pages["dialogue result"])
    radar = page.locator("#chart-radar")
    radar.scroll_into_view_if_needed()
    radar.locator("svg.main-svg").first.wait_for(state="attached")
    assert radar.locator(".legendtitletext").text_content() == "Click a name to hide or show it"
    assert radar.locator(".legendtext").all_text_contents() == list(METHODS)
    assert radar.evaluate("gd => gd.data.map(t => [t.mode, t.fill || 'none'])") == [["lines+markers", "none"]] * 6
    outlines = radar.locator(".polarlayer .trace")
    assert outlines.count() == 6
    radar.locator(".legend .traces").nth(2).click()  # RAG
    page.wait_for_function("() => document.querySelector('#chart-radar').data[2].visible === 'legendonly'")
    assert radar.evaluate("gd => gd.data.map(t => t.visible === 'legendonly')") == [False, False, True, False,
                                                                                    False, False]
    radar.locator(".legend .traces").nth(2).click()
    page.wait_for_function("() => document.querySelector('#chart-radar').data[2].visible === true")


# Each column heading of a result table whose cells below it are aligned one way (numbers to the right) and the
# heading another: "table#id: heading (right over left)".
MISALIGNED_HEADINGS = """() => {
  const found = [];
  for (const table of document.querySelectorAll('table.metrics')) {
    const rows = [...table.tHead ? table.tHead.rows : []];
    if (!rows.length) continue;
    // Each row's cells with the column each starts at, as the table lays them out (rowspans taken into account).
    const grid = (group) => { const taken = []; return group.map((row, r) => { let at = 0;
      return [...row.cells].map(cell => {
        while ((taken[r] || []).includes(at)) at += 1;
        for (let down = 0; down < cell.rowSpan; down++)
          for (let across = 0; across < cell.colSpan; across++) (taken[r + down] = taken[r + down] || []).push(at + across);
        const spot = [cell, [at, cell.colSpan]]; at += cell.colSpan; return spot; }); }); };
    const body = grid([...table.tBodies].flatMap(b => [...b.rows]));
    for (const [heading, [at, span]] of grid(rows)[rows.length - 1]) {
      if (span !== 1 || !heading.textContent.trim()) continue;
      const cells = body.map(row => row.find(([, [a, s]]) => a === at && s === 1))
        .filter(Boolean).map(([cell]) => getComputedStyle(cell).textAlign);
      if (!cells.length) continue;
      const usual = cells.sort((a, b) => cells.filter(c => c === b).length - cells.filter(c => c === a).length)[0];
      const own = getComputedStyle(heading).textAlign;
      if (own !== usual) found.push(`${table.id || table.className}: ${heading.textContent.trim().slice(0, 30)} (${own} over ${usual})`);
    }
  }
  return found;
}"""


@pytest.mark.parametrize("name", ["dialogue result", "dialogue compare", "agentbench result", "agentbench compare",
                                  "mobility result", "mobility compare", "conversation result"])
def test_result_table_headings_are_aligned_like_their_numbers(window, server, chart_pages, name):  # noqa: F811
    if name not in chart_pages:
        pytest.skip("its sample data (DailyMobility, Human-vs-Agent) is not in ../shared/data")
    page = tab(window)
    page.goto(server.url + chart_pages[name])
    assert page.locator("table.metrics").count() > 0
    found = page.evaluate(MISALIGNED_HEADINGS)
    assert found == [], "\n".join(found)
