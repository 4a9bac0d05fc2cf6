"""The sample grid of a dialogue evaluation (issue 16, item 1): methods side by side per session x round, sorted and
filtered from the query string (a permalink, on share pages too), and each judgment as asked and answered."""
from __future__ import annotations

import json
import re

from markupsafe import escape as html_escape

from tests.conftest import jsonl, session_line, wait_for
from tests.web.test_api import upload


def scored(session_id: str, replies: dict[str, list[int]], message: str = "hello") -> dict:
    """A session whose replies carry the local judge's [[score=..]] marks (one per round, per method)."""
    line = session_line(session_id, len(next(iter(replies.values()))), methods=tuple(replies))
    for k, rnd in enumerate(line["rounds"]):
        rnd["user_message"] = f"{message} {k + 1}"
        rnd["responses"] = {m: f"{m} says {scores[k]} [[score={scores[k]}]]" for m, scores in replies.items()}
    return line


def evaluation(client) -> str:
    data = jsonl(scored("s1", {"A": [90, 50], "B": [10, 55]}, "hiking"),
                 scored("s2", {"A": [30, 70], "B": [35, 20]}, "cooking"))
    upload_id = upload(client, data).get_json()["id"]
    return wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"])["id"]


def grid_rows(client, evaluation_id: str, query: str = "") -> list[tuple[str, str]]:
    resp = client.get(f"/evaluations/{evaluation_id}/view/grid{query}")
    assert resp.status_code == 200, resp.status_code
    html = resp.get_data(as_text=True)
    return re.findall(r'<th scope="row"><a [^>]*>(s\d)</a></th>\s*<td>(\d)</td>', html)


def test_rows_sort_by_a_score_or_a_difference_and_filter_by_text_score_and_problems(client):
    evaluation_id = evaluation(client)
    fine = client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]
    assert fine["methods"]["A"]["avg"] is not None  # the local judge read the marks
    assert grid_rows(client, evaluation_id) == [("s1", "1"), ("s1", "2"), ("s2", "1"), ("s2", "2")]
    # A's fine score, highest first: 90, 70, 50, 30
    assert grid_rows(client, evaluation_id, "?sort=fine:A") == [("s1", "1"), ("s2", "2"), ("s1", "2"), ("s2", "1")]
    assert grid_rows(client, evaluation_id, "?sort=fine:A&order=asc")[0] == ("s2", "1")
    assert grid_rows(client, evaluation_id, "?sort=style:A") == grid_rows(client, evaluation_id, "?sort=fine:A")
    # A minus B: 80, 50, -5, -5 (a tie keeps file order)
    assert grid_rows(client, evaluation_id, "?sort=diff:A:B") == [("s1", "1"), ("s2", "2"), ("s1", "2"), ("s2", "1")]
    # Where they disagree most: |A - B| = 80, 50, 5, 5
    assert grid_rows(client, evaluation_id, "?sort=spread")[:2] == [("s1", "1"), ("s2", "2")]
    assert grid_rows(client, evaluation_id, "?range=B&min=30&max=60") == [("s1", "2"), ("s2", "1")]
    assert grid_rows(client, evaluation_id, "?q=cook") == [("s2", "1"), ("s2", "2")]
    assert grid_rows(client, evaluation_id, "?q=B+says+5%5Cd") == [("s1", "2")]  # a regular expression: B says 5x
    assert grid_rows(client, evaluation_id, "?status=problems") == []
    html = client.get(f"/evaluations/{evaluation_id}/view/grid?sort=fine:A").get_data(as_text=True)
    assert "<strong>90.0</strong>" in html and "Style 18 · Content 18" in html  # the fine score and its dimensions

def test_a_bad_pattern_or_number_is_explained_not_a_500(client):
    evaluation_id = evaluation(client)
    for query, words in (("?q=(", "not a valid regular expression"), ("?q=(a%2B)%2B", "repeats a group"),
                         ("?range=A&min=x", "&#39;min&#39; must be a number")):
        resp = client.get(f"/evaluations/{evaluation_id}/view/grid{query}")
        assert resp.status_code == 200 and words in resp.get_data(as_text=True), query


def test_each_judgment_shows_the_prompt_as_sent_and_the_answer(client, judge_server):
    received = []
    judge_server.hook = lambda request: received.append(request["body"])  # and no fault
    evaluation_id = evaluation(client)
    index = client.get(f"/evaluations/{evaluation_id}/view/grid?sort=fine:A").get_data(as_text=True)
    link = re.search(r'href="(/evaluations/[^"]+/view/prompt\?[^"]+mode=fine[^"]*)"', index).group(1).replace("&amp;", "&")
    html = client.get(link).get_data(as_text=True)
    assert "The prompt as sent" in html and "A says 90 [[score=90]]" in html  # the reply judged, inside the prompt
    assert "hiking 1" in html and "<code>user</code>" in html and re.search(r"<dd>\d+ ms</dd>", html)  # its latency
    stored = [j for j in client.application.extensions["store"].judgments(evaluation_id, [0])
              if (j["round"], j["method"], j["mode"]) == (1, "A", "fine")][0]
    assert stored["answer"] and "Total: \\boxed{90}</p>" in html  # the answer as stored, rendered as Markdown
    assert html_escape(stored["answer"]) in client.get(link + "&raw=1").get_data(as_text=True)  # and as written
    # Exactly what the judge received for it, every message (the reply also appears in later rounds' history).
    shown = [body for body in received if all(html_escape(m["content"]) in html for m in body["messages"])]
    assert len(shown) == 1 and "A says 90 [[score=90]]" in shown[0]["messages"][-1]["content"]
    assert client.get(f"/evaluations/{evaluation_id}/view/prompt?index=0&round=9&method=A&mode=fine").status_code == 404


def test_the_grid_works_under_a_share_link(client):
    evaluation_id = evaluation(client)
    share = client.post(f"/api/evaluations/{evaluation_id}/shares").get_json()["url"].split("localhost", 1)[1]
    html = client.get(f"{share}/view/grid?sort=spread").get_data(as_text=True)
    assert "s1" in html and f"/evaluations/{evaluation_id}" not in html and "/share/" in html


def test_rounds_with_a_failed_or_unparsed_judgment_are_found(client, judge_server):
    judge_server.fail_next(1, "malformed", match=lambda r: "B says 55 [[score=55]]" in json.dumps(r["body"])
                           and "\\\\boxed{1}" not in json.dumps(r["body"]))  # B's fine judgment of round 2 of s1
    evaluation_id = evaluation(client)
    assert client.get(f"/api/evaluations/{evaluation_id}").get_json()["progress"]["unparsed"] == 1
    for status in ("problems", "unparsed"):
        assert grid_rows(client, evaluation_id, f"?status={status}") == [("s1", "2")], status
    assert grid_rows(client, evaluation_id, "?status=failed") == []
    html = client.get(f"/evaluations/{evaluation_id}/view/grid?status=unparsed").get_data(as_text=True)
    assert '<span class="status status-unparsed">unparsed</span>' in html
