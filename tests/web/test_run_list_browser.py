"""The list of evaluations with 122 runs in a real browser (issue 41, item 1): 120 runs of one file and judge, as the
issue found them (a list 16,516 px tall whose rows differed by a six-character id), and two real ones. The page is
short (paged), its rows tell the runs apart, a search, a filter and the pages work as a person uses them, two ticked
runs are compared; axe finds no serious violation in any language and nothing is clipped at 1280 to 1920 px."""
from __future__ import annotations

import re

import pytest

from kinds import registry
from storage.store import Store
from tests.browser_support import CHROMIUM, SAMPLE, new_context, require_axe
from tests.web.test_run_list import seed

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Chromium not found at {CHROMIUM}")

if CHROMIUM.exists():
    from playwright.sync_api import expect

    from tests.web.test_accessibility import LANGUAGES, audit
    from tests.web.test_browser import TIMEOUT_MS, dashboard_server, judge  # noqa: F401

SEEDED = 120


def many_runs() -> dict:
    """120 finished runs of one file by one judge, a minute apart, every other one tagged `sweep`."""
    return {f"seed{i:03d}x": ("sample_data.jsonl", "dialogue", {"model": "judge-test"}, ["Base", "PersonaSteer"],
                              "done", [["Base", 40.0 + i % 7], ["PersonaSteer", 60.0 - i % 5]],
                              f"2026-03-01T{8 + i // 60:02d}:{i % 60:02d}:00+00:00", None,
                              ["sweep"] if i % 2 else [], None)
            for i in range(SEEDED)}


@pytest.fixture(scope="module")
def server(tmp_path_factory, judge):  # noqa: F811
    """A dashboard holding the 120 seeded runs and two evaluations of probe.jsonl judged by the local judge."""
    folder = tmp_path_factory.mktemp("run-list")
    with dashboard_server(folder, judge.url) as running:
        store = Store(running.config["DATABASE"], registry.tables())
        seed(store, many_runs())
        store.close()
        running.real = [running.evaluate(running.upload(SAMPLE.read_bytes(), "probe.jsonl"))["id"] for _ in range(2)]
        yield running


@pytest.fixture
def page(browser, server):  # noqa: F811
    context = new_context(browser)
    context.set_default_timeout(TIMEOUT_MS)
    opened = context.new_page()
    yield opened
    context.close()


def titles(page) -> list[str]:
    return page.locator("a.run-title").all_inner_texts()


def test_the_list_of_122_runs_is_short_and_its_rows_tell_them_apart(page, server):
    page.goto(server.url + "/evaluations")
    expect(page.locator("#run-count")).to_have_text("Evaluations 1–20 of 122")
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 3000, height  # 20 rows a page, not 122 (the 120 runs made 16,516 px)
    shown = titles(page)
    assert len(shown) == 20 and len(set(shown)) == 20, shown
    # The seeded runs differ only by when they were made: their titles say it, not an id.
    assert "sample_data.jsonl · judge-test · 2026-03-01 09:59" in shown


def test_search_filter_pages_and_compare_two_ticked_runs(page, server):
    page.goto(server.url + "/evaluations")
    page.locator("input[name=q]").fill("probe")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#run-count")).to_have_text("Evaluations 1–2 of 2")
    assert len(titles(page)) == 2 and all(t.startswith("probe.jsonl · judge-test · ") for t in titles(page))

    page.locator("input[name=q]").fill("")
    page.locator("select[name=tag]").select_option("sweep")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#run-count")).to_have_text("Evaluations 1–20 of 60")
    first_page = titles(page)
    page.get_by_role("link", name="Next").click()
    expect(page.locator("#run-count")).to_have_text("Evaluations 21–40 of 60")
    assert "tag=sweep" in page.url and "page=2" in page.url
    assert not set(titles(page)) & set(first_page)
    page.get_by_role("link", name="Last").click()
    expect(page.locator("#run-count")).to_have_text("Evaluations 41–60 of 60")
    expect(page.locator(".pager")).to_contain_text("Page 3 of 3")

    page.goto(server.url + "/evaluations?q=probe")
    for box in page.locator("input[name=ids]").all():
        box.check()
    page.get_by_role("button", name="Compare selected").click()
    page.wait_for_url(re.compile(r"/compare\?ids="))
    assert sorted(re.findall(r"ids=(\w+)", page.url)) == sorted(server.real)
    expect(page.locator("body")).to_contain_text("Paired differences")


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_list_of_many_runs_passes_axe_and_fits(browser, server, language):  # noqa: F811
    require_axe()
    context = new_context(browser, locale=language, extra_http_headers={"Accept-Language": language})
    try:
        opened = context.new_page()
        opened.set_viewport_size({"width": 1280, "height": 900})
        opened.goto(server.url + "/evaluations?per_page=100&tag=sweep")
        opened.wait_for_load_state("networkidle")
        audit(opened, "list of many runs", language)
    finally:
        context.close()


def test_tag_then_delete_two_ticked_runs_after_confirming(page, server):
    # the last test of the module: it deletes two of the seeded runs (untagged ones, so the `sweep` pages stay)
    page.goto(server.url + "/evaluations?sort=oldest")
    chosen = ["seed000x", "seed002x"]
    for evaluation_id in chosen:
        page.locator(f"input[name=ids][value='{evaluation_id}']").check()
    page.locator("input[name=tags]").fill("picked, to-go")
    page.get_by_role("button", name="Tag selected").click()
    page.wait_for_url(re.compile(r"/evaluations\?sort=oldest$"))  # back to the same list
    page.goto(server.url + "/evaluations?tag=picked")
    expect(page.locator("#run-count")).to_have_text("Evaluations 1–2 of 2")

    for evaluation_id in chosen:
        page.locator(f"input[name=ids][value='{evaluation_id}']").check()
    page.get_by_role("button", name="Delete selected…").click()
    expect(page.locator("h1")).to_have_text("Delete 2 evaluations?")  # asks first, naming them
    expect(page.locator("main li")).to_have_count(2)
    page.get_by_role("link", name="Keep them").click()
    expect(page.locator("#run-count")).to_have_text("Evaluations 1–2 of 2")  # kept
    for evaluation_id in chosen:
        page.locator(f"input[name=ids][value='{evaluation_id}']").check()
    page.get_by_role("button", name="Delete selected…").click()
    page.get_by_role("button", name="Delete 2 evaluations").click()
    expect(page.locator("#run-count")).to_have_text("Evaluations none")
    page.goto(server.url + "/evaluations")
    expect(page.locator("#run-count")).to_have_text("Evaluations 1–20 of 120")
