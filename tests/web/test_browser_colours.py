"""A real browser sees each method in one colour on the result page and the compare page, whatever the order of
the methods in each run (Chromium driven by Playwright, as in test_browser.py)."""
from __future__ import annotations

import json

import pytest

from tests.browser_support import CHROMIUM, SAMPLE, PageWatch, dashboard_server, new_context
from tests.judge_server import JudgeServer
from tests.kinds.test_method_colours import own_colour

if not CHROMIUM.exists():
    pytest.skip(f"browser tests need Chromium at {CHROMIUM} (Debian package `chromium`)", allow_module_level=True)


METHODS = ["Base", "CoT", "PersonaSteer"]  # sample_data.jsonl's order
TRACE_COLOURS = """id => Object.fromEntries(document.getElementById(id).data
    .filter(t => t.mode === "lines+markers").map(t => [t.meta ? t.meta.method : t.name, t.line.color]))"""
SWATCH_COLOURS = """selector => [...document.querySelectorAll(selector)].map(el =>
    [el.textContent.trim(), getComputedStyle(el.querySelector(".swatch")).backgroundColor])"""


def reversed_methods(data: str) -> bytes:
    """sample_data.jsonl with each round's replies in the reverse order, so its methods are listed reversed."""
    lines = []
    for line in data.splitlines():
        session = json.loads(line)
        for rnd in session["rounds"]:
            rnd["responses"] = dict(reversed(list(rnd["responses"].items())))
        lines.append(json.dumps(session, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


def rgb(colour: str) -> str:
    """#rrggbb as the browser's computed style writes it."""
    return "rgb({}, {}, {})".format(*(int(colour[i:i + 2], 16) for i in (1, 3, 5)))


def test_each_method_has_one_colour_on_the_result_and_compare_pages(tmp_path, browser):
    assert len({own_colour(m) for m in METHODS}) == 3  # so each keeps its own colour, alone or together
    expected = {m: own_colour(m) for m in METHODS}
    with JudgeServer() as judge, dashboard_server(tmp_path / "server", judge.url) as server:
        first = server.evaluate(server.upload(SAMPLE.read_bytes(), "sample_data.jsonl"))
        second = server.evaluate(server.upload(reversed_methods(SAMPLE.read_text("utf-8")), "reversed.jsonl"))
        assert first["status"] == second["status"] == "done"
        page = new_context(browser).new_page()
        page.set_default_timeout(20_000)
        watch = PageWatch(page)
        for run, order in ((first, METHODS), (second, METHODS[::-1])):
            page.goto(f"{server.url}/evaluations/{run['id']}")
            page.locator("#chart-al").scroll_into_view_if_needed()  # charts are drawn as they come into view
            page.locator("#chart-al .main-svg").first.wait_for(state="attached")
            shown = page.evaluate(TRACE_COLOURS, "chart-al")
            assert list(shown) == order  # the runs list their methods in different orders
            assert shown == expected
            swatches = page.evaluate(SWATCH_COLOURS, ".method-picker a.chip")
            assert swatches == [[m, rgb(expected[m])] for m in order]
        page.goto(f"{server.url}/compare?ids={second['id']},{first['id']}")
        page.locator("#chart-al").scroll_into_view_if_needed()
        page.locator("#chart-al .main-svg").first.wait_for(state="attached")
        assert page.evaluate(TRACE_COLOURS, "chart-al") == expected
        rows = page.evaluate(SWATCH_COLOURS, "table.metrics tbody th:nth-child(2):has(.swatch)")
        assert rows == [[m, rgb(expected[m])] for m in METHODS[::-1] + METHODS]
        assert watch.errors == [], watch.errors
