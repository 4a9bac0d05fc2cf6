"""Reviewing with the keyboard (issue 41, item 4): a judgment's page steps to the previous and next judgment of the
sample grid it was opened from, in the grid's filter and sort, says where it stands and leads back to the grid's
page and row. The orders below are worked out by hand from the scores and problems the local judge is told to give."""
from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qsl, urlsplit

import pytest

from kinds.dialogue import triage
from tests.conftest import jsonl, session_line, wait_for
from tests.web.test_api import upload

# Each reply's fine score; "x" marks a reply whose fine judgment the judge answers with nothing parseable.
SCORES = {"s1": {"A": ["80", "40x"], "B": ["20x", "60"]},
          "s2": {"A": ["60x", "90"], "B": ["70", "30x"]},
          "s3": {"A": ["10", "50"], "B": ["50x", "10"]}}


def _session(session_id: str, replies: dict[str, list[str]]) -> dict:
    line = session_line(session_id, 2, methods=tuple(replies))
    for k, rnd in enumerate(line["rounds"]):
        rnd["responses"] = {m: f"{m} says {s[k].rstrip('x')} [[score={s[k].rstrip('x')}]]" + (" [[bad]]" if "x" in s[k]
                                                                                               else "")
                            for m, s in replies.items()}
    return line


@pytest.fixture
def evaluation_id(client, judge_server) -> str:
    judge_server.hook = lambda r: "malformed" if r["mode"] == "fine" and "[[bad]]" in r["reply"] else None
    upload_id = upload(client, jsonl(*(_session(s, r) for s, r in SCORES.items()))).get_json()["id"]
    found = wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"])
    stored = client.application.extensions["store"].judgments(found["id"])
    assert sorted((j["session_id"], j["round"], j["method"]) for j in stored if j["status"] == "unparsed") == sorted(
        (s, k + 1, m) for s, replies in SCORES.items() for m, scores in replies.items()
        for k, score in enumerate(scores) if "x" in score)  # the replies marked "x", fine question only
    return found["id"]


def _links(html: str) -> dict[str, str]:
    nav = re.search(r'<nav class="review-steps".*?</nav>', html, re.S).group(0)
    found = {rel: unescape(href) for rel, href in re.findall(r'<a rel="(prev|next)"[^>]*href="([^"]+)"', nav)}
    found["grid"] = unescape(re.search(r'<a href="([^"]+)">Back to the grid</a>', nav).group(1))
    position = re.search(r'<span class="review-position">([^<]*)</span>', nav)
    found["position"] = position.group(1) if position else ""
    return found


def _key(url: str) -> tuple:
    args = dict(parse_qsl(urlsplit(url).query))
    return int(args["index"]), int(args["round"]), args["method"], args["mode"]


def _query(url: str) -> dict:
    return dict(parse_qsl(urlsplit(url).query))


def test_unparsed_judgments_step_in_the_grids_sort_and_back_to_its_page_and_row(client, evaluation_id, monkeypatch):
    monkeypatch.setattr(triage, "PER_PAGE", 2)
    grid = "sort=fine:B&order=desc&status=unparsed"
    html = client.get(f"/evaluations/{evaluation_id}/view/grid?{grid}").get_data(as_text=True)
    # Rows with an unparsed judgment, by B's fine score, highest first, those without one last in file order:
    # (s2, 1) 70, (s1, 2) 60, then (s1, 1), (s2, 2), (s3, 1). Only the unparsed judgments are stepped through:
    expected = [(1, 1, "A", "fine"), (0, 2, "A", "fine"), (0, 1, "B", "fine"), (1, 2, "B", "fine"),
                (2, 1, "B", "fine")]
    start = unescape(re.search(r'href="([^"]+)">Review these judgments one by one', html).group(1))
    assert _query(start) == {"sort": "fine:B", "order": "desc", "status": "unparsed"}
    page = client.get(start).get_data(as_text=True)
    assert "Judgment: s2 · round 1 · A · <code>fine</code>" in page  # the first of the grid's
    seen = [(1, 1, "A", "fine")]
    links = _links(page)
    assert links["position"] == "1 of 5" and "prev" not in links
    while "next" in links:
        assert _query(links["next"]).items() >= {"sort": "fine:B", "order": "desc", "status": "unparsed"}.items()
        seen.append(_key(links["next"]))
        page = client.get(links["next"]).get_data(as_text=True)
        links = _links(page)
        assert links["position"] == f"{len(seen)} of 5"
    assert seen == expected
    # And back, from the last one.
    assert _key(links["prev"]) == expected[3]
    # The grid's page that shows the row (two rows a page here: (s3, 1) is the fifth, on page 3), at that row.
    back = links["grid"]
    assert _query(back) == {"sort": "fine:B", "order": "desc", "status": "unparsed", "page": "3"}
    assert urlsplit(back).fragment == "row-2-1"
    assert 'id="row-2-1"' in client.get(back).get_data(as_text=True)
    middle = client.get(f"/evaluations/{evaluation_id}/view/prompt?index=0&round=1&method=B&mode=fine&{grid}")
    links = _links(middle.get_data(as_text=True))
    assert links["position"] == "3 of 5" and _key(links["prev"]) == expected[1] and _key(links["next"]) == expected[3]
    assert _query(links["grid"])["page"] == "2" and urlsplit(links["grid"]).fragment == "row-0-1"


def test_without_a_problems_filter_every_judgment_of_the_methods_shown_is_stepped_through(client, evaluation_id):
    grid = "sort=fine:A&order=asc&methods=B"
    # A's fine score, lowest first: (s3, 1) 10, (s3, 2) 50, (s1, 1) 80, (s2, 2) 90; unparsed last: (s1, 2), (s2, 1).
    # Only B shown: its fine then its yes/no judgment per row, 12 in all; B's verdict of (s1, 1) is the sixth.
    url = f"/evaluations/{evaluation_id}/view/prompt?index=0&round=1&method=B&mode=binary&{grid}"
    links = _links(client.get(url).get_data(as_text=True))
    assert links["position"] == "6 of 12"
    assert _key(links["prev"]) == (0, 1, "B", "fine") and _key(links["next"]) == (1, 2, "B", "fine")
    assert _query(links["grid"]) == {"sort": "fine:A", "order": "asc", "methods": "B"}  # the first page: no page
    grid_html = client.get(f"/evaluations/{evaluation_id}/view/grid?{grid}").get_data(as_text=True)
    judge_link = unescape(re.search(r'href="([^"]+mode=binary[^"]*)"', grid_html).group(1))
    assert _query(judge_link).items() >= {"sort": "fine:A", "order": "asc", "methods": "B"}.items()  # carried


def test_a_review_saved_returns_within_the_grid_and_a_judgment_outside_it_still_leads_back(client, evaluation_id):
    grid = {"sort": "fine:B", "status": "unparsed"}
    url = f"/evaluations/{evaluation_id}/view/prompt?index=0&round=1&method=B&mode=fine&sort=fine:B&status=unparsed"
    html = client.get(url).get_data(as_text=True)
    assert 'name="grid_status" value="unparsed"' in html
    resp = client.post(f"/evaluations/{evaluation_id}/reviews",
                       data={"index": "0", "round": "1", "method": "B", "mode": "fine", "decision": "overridden",
                             "total": "25", "grid_sort": "fine:B", "grid_status": "unparsed"})
    assert resp.status_code == 302
    assert _query(resp.headers["Location"]) == {"index": "0", "round": "1", "method": "B", "mode": "fine", **grid}
    # A parsed judgment is not among the unparsed ones: no position, no steps, the way back still there.
    outside = client.get(f"/evaluations/{evaluation_id}/view/prompt?index=0&round=1&method=A&mode=fine&status=unparsed")
    links = _links(outside.get_data(as_text=True))
    assert links["position"] == "" and "next" not in links and "prev" not in links
    assert _query(links["grid"]) == {"status": "unparsed"} and urlsplit(links["grid"]).fragment == "row-0-1"
    # A grid with no rows has nothing to review first; a bad pattern is not a 500.
    assert client.get(f"/evaluations/{evaluation_id}/view/prompt?q=nothing+matches+this").status_code == 404
    assert client.get(f"/evaluations/{evaluation_id}/view/prompt?index=0&round=1&method=A&mode=fine&q=(").status_code \
        == 200
