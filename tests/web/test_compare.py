"""The compare page: finished dialogue evaluations side by side, with readable errors."""
from __future__ import annotations

import json
import re

import pytest

from tests.conftest import jsonl, session_line, wait_for
from tests.web.test_api import upload
from tests.web.test_pages import XSS
from tests.web.test_share import evaluate


def run_sessions(prefix: str, a_score: int, a_keep: list[int], b_score: int, rounds: int = 2, count: int = 3):
    """Sessions where every reply of A scores a_score (keep verdicts a_keep by round) and B scores b_score."""
    sessions = []
    for i in range(count):
        s = session_line(f"{prefix}{i}", rounds=rounds)
        for k, rnd in enumerate(s["rounds"]):
            rnd["responses"] = {"A": f"A {prefix} {i} {k} [[score={a_score}]] [[keep={a_keep[k]}]]",
                                "B": f"B {prefix} {i} {k} [[score={b_score}]] [[keep=0]]"}
        sessions.append(s)
    return jsonl(*sessions)


@pytest.fixture
def two_runs(client):
    """Run 1: A always 60 and keeps chatting, B 40. Run 2: A always 70, keeps chatting half the time, B 40."""
    first = evaluate(client, run_sessions("one", 60, [1, 1], 40), name="run1.jsonl")
    second = evaluate(client, run_sessions("two", 70, [1, 0], 40), name="run2.jsonl")
    return first, second


def figures_of(html: str) -> dict:
    return json.loads(re.search(r'<script id="figures" type="application/json">(.*?)</script>', html, re.S).group(1))


def test_compare_two_evaluations(client, two_runs):
    first, second = two_runs
    resp = client.get(f"/compare?ids={first},{second}")
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    # merged table: one row per (evaluation, method), labelled by what differs between the runs (web/run_labels.py)
    for run_id, filename in ((first, "run1.jsonl"), (second, "run2.jsonl")):
        label = filename  # the one fact that tells these two runs apart
        assert html.count(f'<th scope="row">{label}</th>') == 2
        assert f'href="/evaluations/{run_id}"' in html
    assert "60.0" in html and "70.0" in html and "[60.0, 60.0]" in html and "[70.0, 70.0]" in html
    # differences: A +10.0 in AVG, -50.0 in binary rate, CIs apart; B unchanged, CIs overlap
    assert "+10.0" in html and "-50.0" in html and "do not overlap" in html and ">overlap<" in html
    assert 'id="chart-al"' in html and 'id="chart-binary"' in html and "/vendor/plotly.min.js" in html
    assert "/static/js/result.js" in html  # it draws the charts, as on the result page


def test_differences_are_exact(app, client, two_runs):
    from kinds.dialogue.views import comparison
    from web.compare import load_runs
    first, second = two_runs
    with app.test_request_context():
        data = comparison(load_runs([first, second]))
    assert [(r["run"]["id"], r["method"]) for r in data["rows"]] == [(first, "A"), (first, "B"),
                                                                     (second, "A"), (second, "B")]
    diffs = {d["method"]: d for d in data["differences"]}
    assert diffs["A"]["base"]["id"] == first and diffs["A"]["other"]["id"] == second
    assert diffs["A"]["avg"] == 10.0 and diffs["A"]["binary_rate"] == -50.0
    assert diffs["A"]["avg_overlap"] is False and diffs["A"]["binary_rate_overlap"] is False
    assert diffs["B"]["avg"] == 0.0 and diffs["B"]["binary_rate"] == 0.0 and diffs["B"]["avg_overlap"] is True
    # in the order given: the first id listed is the baseline
    with app.test_request_context():
        reverse = {d["method"]: d for d in comparison(load_runs([second, first]))["differences"]}
    assert reverse["A"]["avg"] == -10.0 and reverse["A"]["base"]["id"] == second


def test_figures_overlay_both_runs(client, two_runs):
    first, second = two_runs
    figures = figures_of(client.get(f"/compare?ids={first},{second}").get_data(as_text=True))
    for key in ("al_curve", "binary_curve"):
        traces = figures[key]["data"]
        assert [(t["meta"]["evaluation_id"], t["meta"]["method"]) for t in traces] == [
            (first, "A"), (first, "B"), (second, "A"), (second, "B")]
        colour = {(t["meta"]["evaluation_id"], t["meta"]["method"]): t["line"]["color"] for t in traces}
        dash = {(t["meta"]["evaluation_id"], t["meta"]["method"]): t["line"]["dash"] for t in traces}
        assert colour[(first, "A")] == colour[(second, "A")] != colour[(first, "B")]  # one colour per method
        assert dash[(first, "A")] == dash[(first, "B")] != dash[(second, "A")]  # one dash per evaluation
    al = {(t["meta"]["evaluation_id"], t["meta"]["method"]): t["y"] for t in figures["al_curve"]["data"]}
    assert al[(first, "A")] == [60.0, 60.0] and al[(second, "A")] == [70.0, 70.0]
    bar = {(t["meta"]["evaluation_id"], t["meta"]["method"]): t["y"] for t in figures["binary_curve"]["data"]}
    assert bar[(first, "A")] == [100.0, 100.0] and bar[(second, "A")] == [100.0, 0.0]


def test_both_query_forms(client, two_runs):
    first, second = two_runs
    joined = client.get(f"/compare?ids={first},{second}")
    repeated = client.get(f"/compare?ids={first}&ids={second}")
    assert joined.status_code == repeated.status_code == 200
    assert figures_of(joined.get_data(as_text=True)) == figures_of(repeated.get_data(as_text=True))
    spaced = client.get(f"/compare?ids={first},%20{second},")
    assert spaced.status_code == 200


def test_errors_are_400_with_a_message(client, two_runs, judge_server):
    first, second = two_runs
    for query, message in ((f"ids={first}", "at least two"), (f"ids={first},{first}", "at least two"),
                           (f"ids={first},nope", "nope"), (f"ids={first}&ids=nope", "No evaluation")):
        resp = client.get(f"/compare?{query}")
        assert resp.status_code == 400, query
        html = resp.get_data(as_text=True)
        assert message in html and 'role="alert"' in html, query
        assert f'value="{first}"' in html  # the picker is offered again, with the choice kept
    judge_server.latency_s = 0.5
    upload_id = upload(client, jsonl(session_line("slow", 4))).get_json()["id"]
    running = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"]
    resp = client.get(f"/compare?ids={first},{running}")
    assert resp.status_code == 400 and "not finished" in resp.get_data(as_text=True)
    assert running in resp.get_data(as_text=True)
    client.post(f"/api/evaluations/{running}/cancel")
    assert wait_for(client, running)["status"] == "cancelled"
    resp = client.get(f"/compare?ids={first},{running}")
    assert resp.status_code == 400 and "not finished" in resp.get_data(as_text=True)
    too_many = ",".join([first, second] + [f"x{i}" for i in range(10)])
    assert "at most" in client.get(f"/compare?ids={too_many}").get_data(as_text=True)


def test_picker_and_links(client, two_runs):
    first, second = two_runs
    page = client.get("/compare")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert f'name="ids" value="{first}"' in html and f'name="ids" value="{second}"' in html
    assert 'action="/compare"' in html and "Compare selected" in html
    listing = client.get("/evaluations").get_data(as_text=True)
    assert 'action="/evaluations/selected"' in listing and f'name="ids" value="{first}"' in listing
    assert "Compare selected" in listing
    # The list's "Compare selected" goes on to the compare page of the ticked runs.
    chosen = client.post("/evaluations/selected", data={"ids": [first, second], "action": "compare"})
    assert chosen.status_code == 303 and chosen.headers["Location"] == f"/compare?ids={first}&ids={second}"
    assert 'href="/compare"' in client.get("/").get_data(as_text=True)  # in the navigation


def test_compare_escapes_user_text(client):
    s = session_line(XSS, 2, methods=("<b>A</b>", "B"))
    s["rounds"][0]["responses"]["B"] = XSS + " [[score=50]]"
    first = evaluate(client, jsonl(s), name="<img src=x onerror=alert(2)>.jsonl")  # a name without "/" is kept
    second = evaluate(client, run_sessions("two", 70, [1, 0], 40), name="run2.jsonl")
    html = client.get(f"/compare?ids={first},{second}").get_data(as_text=True)
    assert "<script>alert(1)" not in html and "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(2)&gt;.jsonl" in html
    names = [t["name"] for t in figures_of(html)["al_curve"]["data"]]  # Plotly reads tags in names: escaped
    assert all("<" not in n for n in names) and any("&lt;img src=x" in n for n in names)
    assert "&lt;b&gt;A&lt;/b&gt;" in html and "<b>A" not in html
    assert any(n.startswith("&lt;b&gt;A&lt;/b&gt; · ") for n in names)  # the method name too
