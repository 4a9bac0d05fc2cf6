"""Replies rendered as safe HTML: Markdown and JSON come out readable, and no attempt at markup or script survives."""
from __future__ import annotations

import re

import pytest

from common.rich_text import MAX_MARKDOWN, pretty_json, raw, render

ATTACKS = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    '<a href="javascript:alert(1)">click</a>',
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](  javascript:alert(1))",
    "[click](java&#115;cript:alert(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[click](vbscript:msgbox)",
    "![x](javascript:alert(1))",
    '![x" onerror="alert(1)](https://example.org/a.png)',
    '[x](https://example.org/" onmouseover="alert(1))',
    "<<script>script>alert(1)<</script>/script>",
    "<svg/onload=alert(1)>",
    "<iframe src=https://example.org></iframe>",
    "<style>body{display:none}</style>",
    "`<script>alert(1)</script>`",
    "```html\n<script>alert(1)</script>\n```",
    "| a |\n|---|\n| <img src=x onerror=alert(1)> |",
    "<details open ontoggle=alert(1)>",
    "[a](<javascript:alert(1)>)",
]


def tags(html: str) -> set[str]:
    """The names of the HTML tags in a fragment."""
    return {name.lower() for name in re.findall(r"<\s*([a-zA-Z][a-zA-Z0-9]*)", html)}


@pytest.mark.parametrize("text", ATTACKS)
def test_no_attack_survives(text):
    html = str(render(text))
    assert tags(html) <= {"div", "p", "a", "code", "pre", "table", "thead", "tbody", "tr", "th", "td", "strong"}
    real_tags = re.findall(r"<[a-zA-Z][^>]*>", html)  # "&lt;..." is text
    attributes = {name for tag in real_tags for name in re.findall(r"\s([\w-]+)=", tag)}
    assert attributes <= {"class", "href", "rel", "tabindex", "role", "aria-label"}  # no handler, no src, no style
    for href in re.findall(r'href="([^"]*)"', " ".join(real_tags)):
        assert href.startswith(("http://", "https://", "mailto:")), href
    assert "<script" not in html.lower() and "<img" not in html.lower()


def test_the_visible_text_of_raw_html_is_kept_escaped():
    assert str(render("<b>bold?</b> & more")) == '<div class="rich"><p>&lt;b&gt;bold?&lt;/b&gt; &amp; more</p>\n</div>'


def test_markdown_renders():
    html = str(render("# Plan\n\n**Day 1**: *West Lake*, `code` and ~~old~~\n\n- one\n- two\n\n1. first\n\n"
                      "> quoted\n\n```\nx = 1\n```\n\n---\n[site](https://example.org)"))
    assert '<p class="md-heading"><strong>Plan</strong></p>' in html  # no <h1>: the page's outline stays its own
    assert "<strong>Day 1</strong>" in html and "<em>West Lake</em>" in html and "<code>code</code>" in html
    assert "<s>old</s>" in html
    assert "<ul>\n<li>one</li>\n<li>two</li>\n</ul>" in html and "<ol>\n<li>first</li>\n</ol>" in html
    assert "<blockquote>\n<p>quoted</p>\n</blockquote>" in html and "<pre><code>x = 1\n</code></pre>" in html
    assert "<hr>" in html
    assert "<p>Style: 16/20<br>\nTotal: 80</p>" in str(render("Style: 16/20\nTotal: 80"))  # a line break stays one
    assert '<a href="https://example.org" rel="nofollow noopener noreferrer">site</a>' in html


def test_a_table_scrolls_in_its_own_focusable_region():
    html = str(render("| a | b |\n|---|---|\n| 1 | 2 |", table_label="Table <x>"))
    assert ('<div class="scroll md-table" tabindex="0" role="region" aria-label="Table &lt;x&gt;"><table>'
            "\n<thead>\n<tr>\n<th>a</th>\n<th>b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1</td>\n<td>2</td>\n"
            "</tr>\n</tbody>\n</table></div>") in html


def test_an_image_becomes_a_link_named_by_its_alt_text():
    assert '<a href="https://example.org/a.png" rel="nofollow noopener noreferrer">map</a>' in str(
        render("![map](https://example.org/a.png)"))


def test_json_is_pretty_printed_and_escaped():
    html = str(render('{"verdict": "<b>yes</b>", "scores": [1, 2], "城市": "杭州"}'))
    assert html == ('<div class="rich"><pre class="json"><code>{\n  &#34;verdict&#34;: &#34;&lt;b&gt;yes&lt;/b&gt;&#34;,'
                    '\n  &#34;scores&#34;: [\n    1,\n    2\n  ],\n  &#34;城市&#34;: &#34;杭州&#34;\n}</code></pre></div>'
                    ).replace("&#34;", "&quot;")
    assert pretty_json(" [1, {\"a\": null}] ") == '[\n  1,\n  {\n    "a": null\n  }\n]'


@pytest.mark.parametrize("text", ["", "42", '"a string"', "[1, 2", "{not json}", "true"])
def test_what_is_not_a_json_object_or_array_is_markdown(text):
    assert pretty_json(text) is None


def test_nothing_and_none_render_empty():
    assert str(render(None)) == '<div class="rich"></div>' == str(render(""))


def test_raw_is_the_text_as_written_escaped():
    assert str(raw("**a** <script>x</script>\n  b")) == \
        '<pre class="raw-text">**a** &lt;script&gt;x&lt;/script&gt;\n  b</pre>'


def test_a_reply_too_long_for_markdown_is_shown_as_written():
    # as written, escaped, in <pre>: markdown-it-py (seconds over such a text) is never asked
    text = "[" * (MAX_MARKDOWN + 1) + "<b>"
    html = str(render(text))
    assert html == f'<div class="rich"><pre class="raw-text">{"[" * (MAX_MARKDOWN + 1)}&lt;b&gt;</pre></div>'
    assert "<strong>" in str(render("**a** " + "b" * (MAX_MARKDOWN - 7)))  # at the limit: still Markdown
