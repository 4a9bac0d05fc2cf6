"""Every chart of every kind's result and compare pages, and of a dialogue dataset's leaderboard, drawn in Chromium
at 1280, 1440 and 1920 px: no label cut at the chart's edge, no legend over the x axis's title or tick labels, no legend that scrolls (also after the
window is resized), and no radar tick label over the radial axis's."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser_support import CHROMIUM
from tests.conftest import jsonl, session_line

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Chromium not found at {CHROMIUM}")

if CHROMIUM.exists():
    from tests.web.test_accessibility import _conversation_upload, _finished
    from tests.web.test_browser import browser, judge, mobility_evaluation, server  # noqa: F401

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
def test_charts_fit_and_nothing_covers_their_labels(browser, server, chart_pages, name):  # noqa: F811
    if name not in chart_pages:
        pytest.skip("its sample data (DailyMobility, Human-vs-Agent) is not in ../shared/data")
    context = browser.new_context(viewport={"width": WIDTHS[0], "height": 900})
    try:
        page = context.new_page()
        page.goto(server.url + chart_pages[name])
        found = []
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(300)  # Plotly redraws responsive charts on the resize event
            found += [f"{width} px: {p}" for p in chart_problems(page)]
        page.set_viewport_size({"width": WIDTHS[0], "height": 900})  # shrunk back after a wide window
        page.wait_for_timeout(300)
        found += [f"back to {WIDTHS[0]} px: {p}" for p in chart_problems(page)]
    finally:
        context.close()
    assert not found, f"{name} ({chart_pages[name]}):\n" + "\n".join(dict.fromkeys(found))
