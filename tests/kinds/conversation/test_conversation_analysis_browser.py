"""The Human-vs-Agent analysis section in a real browser: its charts drawn, the label-set choice made with the form,
and no serious accessibility violation (axe-core), on a real server (tests/browser_support.py)."""
from __future__ import annotations

import json

import pytest

from tests.browser_support import CHROMIUM, PageWatch, axe_violations, dashboard_server, new_context
from tests.judge_server import JudgeServer
from tests.kinds.conversation.test_conversation_analysis import HAND

if not CHROMIUM.exists():
    pytest.skip(f"browser tests need Chromium at {CHROMIUM} (Debian package `chromium`)", allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402  (after the skip)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with JudgeServer() as judge, dashboard_server(tmp_path_factory.mktemp("analysis"), judge.url) as running:
        yield running


def test_the_analysis_section_draws_chooses_labels_and_passes_axe(server, browser):
    upload_id = server.upload(json.dumps(HAND).encode(), "hand.json")
    evaluation = server.evaluate(upload_id)
    assert evaluation["status"] == "done", evaluation
    context = new_context(browser)
    page = context.new_page()
    watch = PageWatch(page)
    page.goto(f"{server.url}/evaluations/{evaluation['id']}#analysis")
    section = page.locator("#analysis")
    expect(section.locator('[data-figure="behaviour"] .main-svg').first).to_be_visible(timeout=20_000)
    page.select_option("#analysis-labels", "human")
    page.select_option("#analysis-rule", "known")
    with page.expect_navigation():
        section.get_by_role("button", name="Show").click()
    assert "labels=human" in page.url and "hallucination=known" in page.url
    expect(page.locator("#analysis-labels")).to_have_value("human")
    expect(page.locator("#label-checks")).to_contain_text("Choose labels other than the reference")
    page.locator("#hallucination-awareness").scroll_into_view_if_needed()
    expect(page.locator('[data-figure="hallucination_turns"] .main-svg').first).to_be_visible()
    page.locator("#assistant-quality").scroll_into_view_if_needed()
    expect(page.locator('[data-figure="quality"] .main-svg').first).to_be_visible()
    assert axe_violations(page) == []
    assert watch.errors == []
