"""Replies shown as sanitised Markdown or pretty JSON wherever they appear, or as written with `?raw=1`; no markup or
script a model wrote ever reaches a page as markup."""
from __future__ import annotations

import io
import json
import re

from tests.conftest import jsonl, wait_for
from tests.kinds.dialogue.test_sample_grid import scored
from tests.web.test_api import upload

HOSTILE = ("**Bold plan** <script>alert(1)</script> <img src=x onerror=alert(2)>\n\n# Day 1\n\n- West Lake\n"
           "- [tea](javascript:alert(3))\n\n| a | b |\n|---|---|\n| 1 | 2 |")


def dialogue(client) -> str:
    line = scored("s1", {"A": [80]}, "hello")
    line["rounds"][0]["responses"]["A"] = HOSTILE + " [[score=80]]"
    upload_id = upload(client, jsonl(line)).get_json()["id"]
    return wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"])["id"]


def inert(html: str) -> None:
    """Nothing the reply wrote is markup: no script or image tag, no handler attribute, no javascript: link."""
    real_tags = re.findall(r"<[a-zA-Z][^>]*>", html)  # "&lt;..." is text
    assert not [t for t in real_tags if re.match(r"<(script|img)\b", t) and "alert" in t]
    assert not [t for t in real_tags if re.search(r"\son\w+=", t) or "javascript:" in t]
    assert "<script>alert" not in html


def test_the_grid_and_a_session_render_replies_as_markdown(client):
    evaluation_id = dialogue(client)
    for path in ("view/grid", "view/session?index=0"):
        html = client.get(f"/evaluations/{evaluation_id}/{path}").get_data(as_text=True)
        assert '<div class="rich"><p><strong>Bold plan</strong> &lt;script&gt;alert(1)&lt;/script&gt; ' \
               "&lt;img src=x onerror=alert(2)&gt;</p>" in html
        assert '<p class="md-heading"><strong>Day 1</strong></p>' in html
        assert "<li>[tea](javascript:alert(3))</li>" in html  # a javascript: link stays text
        assert '<div class="scroll md-table" tabindex="0" role="region" aria-label="Table, scrolls sideways"><table>' \
            in html
        inert(html)


def test_raw_shows_the_reply_as_written_and_the_toggle_goes_back(client):
    evaluation_id = dialogue(client)
    html = client.get(f"/evaluations/{evaluation_id}/view/grid?sort=fine:A&raw=1").get_data(as_text=True)
    assert '<pre class="raw-text">**Bold plan** &lt;script&gt;alert(1)&lt;/script&gt;' in html
    assert '<div class="rich"><p><strong>Bold plan' not in html  # one copy, not both
    grid = f"/evaluations/{evaluation_id}/view/grid"
    assert f'<p class="raw-toggle"><a href="{grid}?sort=fine%3AA">Show the replies formatted</a></p>' in html
    assert '<input type="hidden" name="raw" value="1">' in html  # filtering keeps the mode
    formatted = client.get(f"/evaluations/{evaluation_id}/view/grid?sort=fine:A").get_data(as_text=True)
    assert f'<a href="{grid}?sort=fine%3AA&amp;raw=1">Show the replies as written (raw text)</a>' in formatted
    session = client.get(f"/evaluations/{evaluation_id}/view/session?index=0&raw=1").get_data(as_text=True)
    assert '<pre class="raw-text">**Bold plan**' in session
    page = client.get(f"/evaluations/{evaluation_id}?raw=1").get_data(as_text=True)
    assert f"/evaluations/{evaluation_id}/view/session?index=0&amp;raw=1" in page  # the sessions load as written
    assert f'href="/evaluations/{evaluation_id}#sessions">Show the replies formatted' in page


def test_the_judges_answer_is_rendered_and_raw_on_its_page(client):
    evaluation_id = dialogue(client)
    url = f"/evaluations/{evaluation_id}/view/prompt?index=0&round=1&method=A&mode=fine"
    html = client.get(url).get_data(as_text=True)
    answer = re.search(r'<section class="card" id="answer">(.*?)</section>', html, re.S).group(1)
    assert '<div class="rich">' in answer
    assert f'href="/evaluations/{evaluation_id}/view/prompt?index=0&amp;round=1&amp;method=A&amp;mode=fine&amp;raw=1' \
        '#answer"' in answer
    raw = client.get(url + "&raw=1").get_data(as_text=True)
    assert '<pre class="raw-text">' in re.search(r'id="answer">(.*?)</section>', raw, re.S).group(1)
    # the prompt as sent is always shown as sent, the reply in it escaped
    assert "**Bold plan** &lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_share_pages_render_and_toggle_the_same(client):
    evaluation_id = dialogue(client)
    token = client.post(f"/api/evaluations/{evaluation_id}/shares").get_json()["token"]
    html = client.get(f"/share/{token}/view/grid").get_data(as_text=True)
    assert "<strong>Bold plan</strong>" in html
    assert f'<a href="/share/{token}/view/grid?raw=1">Show the replies as written' in html
    inert(html)
    raw = client.get(f"/share/{token}/view/grid?raw=1").get_data(as_text=True)
    assert '<pre class="raw-text">**Bold plan**' in raw


def test_a_transcript_renders_markdown_and_pretty_json(client):
    history = [{"role": "user", "content": '{"city": "杭州", "days": [1, 2]}'},
               {"role": "assistant", "content": HOSTILE}]
    payload = json.dumps([{"source": "agent", "task": "travel planning", "history": history}]).encode()
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(payload), "mine.json")},
                       content_type="multipart/form-data")
    created = client.post("/api/evaluations", json={"upload_id": resp.get_json()["id"]}).get_json()
    wait_for(client, created["id"])
    html = client.get(f"/evaluations/{created['id']}/view/transcript?index=0").get_data(as_text=True)
    assert ('<pre class="json"><code>{\n  &quot;city&quot;: &quot;杭州&quot;,\n  &quot;days&quot;: [\n    1,\n    2\n'
            "  ]\n}</code></pre>") in html
    assert "<strong>Bold plan</strong>" in html
    inert(html)
    raw = client.get(f"/evaluations/{created['id']}/view/transcript?index=0&raw=1").get_data(as_text=True)
    assert '<pre class="raw-text">{&#34;city&#34;: &#34;杭州&#34;, &#34;days&#34;: [1, 2]}</pre>' in raw
    transcript = f"/evaluations/{created['id']}/view/transcript"
    assert f'href="{transcript}?index=0#transcript">Show the replies formatted' in raw
