"""The language switcher's font: a cut of Noto Sans CJK holding exactly the non-Latin letters of the languages'
names, declared for just those code points, loaded by a real page, and inline in offline reports."""
from __future__ import annotations

import re

import pytest
from fontTools.ttLib import TTFont

from tests.browser_support import CHROMIUM
from tests.conftest import jsonl, session_line
from tests.web.test_pages import finished_evaluation
from translations import LANGUAGES
from vendor.language_font import OUT, language_characters


def test_the_font_has_a_glyph_for_every_letter_of_the_language_names():
    assert language_characters() == "中文국어한"  # 中文 and 한국어, each letter once
    cmap = TTFont(str(OUT)).getBestCmap()
    assert {chr(code) for code in cmap} >= set(language_characters())
    assert OUT.stat().st_size < 8 * 1024


def test_the_stylesheet_declares_it_for_those_letters_only(client):
    css = client.get("/static/css/style.css").get_data(as_text=True)
    declared = re.search(r'@font-face \{ font-family: "Language names";[^}]*unicode-range: ([^;]+);', css).group(1)
    assert {chr(int(code[2:], 16)) for code in declared.split(", ")} == set(language_characters())
    assert client.get("/static/fonts/language-names.woff2").status_code == 200


def test_the_offline_report_carries_the_font_inline(client):
    evaluation_id = finished_evaluation(client, jsonl(session_line("s1")))
    html = client.get(f"/evaluations/{evaluation_id}/report.html").get_data(as_text=True)
    assert "data:font/woff2;base64," in html and "../fonts/" not in html


@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"Chromium not found at {CHROMIUM}")
def test_a_page_shows_the_names_in_that_font(client, browser):
    html = client.get("/").get_data(as_text=True)
    assert all(f">{name}<" in html for name in LANGUAGES.values())
    css = client.get("/static/css/style.css").get_data(as_text=True)
    font = client.get("/static/fonts/language-names.woff2").data
    page = browser.new_page()
    page.route("http://dashboard.test/**", lambda route: route.fulfill(
        body=font if route.request.url.endswith(".woff2") else css,
        content_type="font/woff2" if route.request.url.endswith(".woff2") else "text/css"))
    # The face asked for by name: on a machine with a CJK font the stack's earlier fonts would serve these.
    page.set_content('<link rel="stylesheet" href="http://dashboard.test/static/css/style.css">'
                     '<p style="font-family: \'Language names\', monospace">中文 한국어</p>')
    page.wait_for_function("document.fonts.status === 'loaded'")
    assert page.evaluate("""() => document.fonts.check('15px "Language names"', '中文한국어')
        && [...document.fonts].some(f => f.family.includes('Language names') && f.status === 'loaded')""")
