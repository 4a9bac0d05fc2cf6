"""People's ratings attached to a dialogue evaluation (issue 14, item 4): the file's checks, line by line, and the
judge-vs-people agreement of a panel on a file built so that every figure is known in advance."""
from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest

from kinds.agreement import krippendorff_alpha
from kinds.dialogue import human_file
from kinds.dialogue.human_agreement import human_agreement, people_alpha
from tests.conftest import jsonl, session_line, wait_for, wait_rescored
from tests.kinds.dialogue.test_judge_panel import SCORES, marked_sessions, naive_interval_alpha
from tests.web.test_api import upload
from tests.web.test_share import create_share, share_path

NAN = float("nan")
CELLS = {("s1", 1), ("s1", 2), ("s2", 1)}
METHODS = ["A", "B"]


def check(text: str, name: str = "ratings.csv"):
    return human_file.read(io.BytesIO(text.encode("utf-8")), name, CELLS, METHODS)


def test_a_valid_csv_and_jsonl():
    report, rows = check("session_id,round,method,total,binary,style,comment\n"
                         "s1,1,A,70,1,14,fine\ns1,2,B,,0,\n")
    assert report.ok and [w.message for w in report.warnings] == ["Columns ignored: comment."]
    assert rows == [
        {"line": 2, "rater": "ratings.csv", "session_id": "s1", "round": 1, "method": "A", "total": 70.0,
         "verdict": 1, "style": 14.0, "content": None, "naturalness": None, "personalization": None,
         "conversation": None},
        {"line": 3, "rater": "ratings.csv", "session_id": "s1", "round": 2, "method": "B", "total": None,
         "verdict": 0, "style": None, "content": None, "naturalness": None, "personalization": None,
         "conversation": None}]
    assert report.summary == {"ratings": 2, "raters": ["ratings.csv"], "sessions": 1,
                              "rated": ["total", "binary", "style"]}
    report, rows = check('{"session_id": "s2", "round": 1, "method": "A", "binary": true}\n\n'
                         '{"session_id": "s1", "round": 1.0, "method": "B", "total": 55.5}\n', "r.jsonl")
    assert report.ok and [(r["line"], r["verdict"], r["total"]) for r in rows] == [(1, 1, None), (3, None, 55.5)]


@pytest.mark.parametrize("text, name, line, path, message", [
    ("session_id,round,total\ns1,1,50\n", "r.csv", 1, "", "must name the columns session_id, round and method"),
    ("session_id,round,method\ns1,1,A\n", "r.csv", 1, "", "at least one of total, binary"),
    ("session_id,round,method,total\ns1,x,A,50\n", "r.csv", 2, "round", "'round' must be a whole number from 1"),
    ("session_id,round,method,total\ns1,1,C,50\n", "r.csv", 2, "method", 'method "C" is not one of'),
    ("session_id,round,method,total\ns2,2,A,50\n", "r.csv", 2, "round", "has no round 2 in session s2"),
    ("session_id,round,method,total\ns1,1,A,101\n", "r.csv", 2, "total", "'total' must be a number from 0 to 100"),
    ("session_id,round,method,content\ns1,1,A,21\n", "r.csv", 2, "content", "'content' must be a number from 0 to 20"),
    ("session_id,round,method,binary\ns1,1,A,yes\n", "r.csv", 2, "binary", "'binary' must be 0 or 1"),
    ("session_id,round,method,binary\ns1,1,A,2\n", "r.csv", 2, "binary", "'binary' must be 0 or 1"),
    ("session_id,round,method,total\ns1,1,A,50\ns1,2,A,60\ns1,1,A,70\n", "r.csv", 4, "",
     "rates the same reply as line 2"),
    ("session_id,round,method,total\ns1,1,A,\n", "r.csv", 2, "", "gives no rating"),
    ("session_id,round,method,total\ns1,1,A,50,9\n", "r.csv", 2, "", "more values than the header"),
    ("session_id,round,method,total\n", "r.csv", None, "", "a header but no ratings"),
    ("  \n", "r.csv", None, "", "The file is empty"),
    ('{"session_id": "s1", "round": 1, "method": "A", "total": 50}\n{"session_id": "s1",\n', "r.jsonl", 2, "",
     "Line 2 is not valid JSON"),
    ('["s1", 1, "A", 50]\n', "r.jsonl", 1, "", "must be a JSON object"),
    ('{"session_id": 7, "round": 1, "method": "A", "total": 50}\n', "r.jsonl", 1, "round", "has no round 1 in session 7"),
    ('{"round": 1, "method": "A", "total": 50}\n', "r.jsonl", 1, "session_id", "'session_id' must name a session"),
])
def test_every_problem_names_its_line_and_column(text, name, line, path, message):
    report, rows = check(text, name)
    assert not report.ok and rows == []
    problem = report.problems[0]
    assert (problem.line, problem.path) == (line, path) and message in problem.message, report.problems


def test_not_utf8_and_too_large(monkeypatch):
    report, _rows = human_file.read(io.BytesIO(b"session_id,round,method,total\ns1,1,A,\xff\n"), "r.csv", CELLS,
                                    METHODS)
    assert report.problems[0].line == 2 and "not valid UTF-8" in report.problems[0].message
    monkeypatch.setattr(human_file, "MAX_BYTES", 10)
    report, _rows = check("session_id,round,method,total\ns1,1,A,50\n")
    assert "larger than" in report.problems[0].message


# -- the figures, known in advance ----------------------------------------------------------------

def replies():
    """(session, round, method, judge-a total, judge-a verdict) of every reply of marked_sessions()."""
    return [(sid, k, m, r[0] if m == "A" else r[2], r[1] if m == "A" else r[3])
            for sid, rounds in SCORES.items() for k, r in enumerate(rounds, 1) for m in ("A", "B")]


def ratings_csv(rows) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["session_id", "round", "method", "total", "binary", "style"])
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def attach(client, evaluation_id: str, data: bytes, name: str = "people.csv"):
    """POST a ratings file; once accepted (202), wait until the rescore job it started is over."""
    answer = client.post(f"/api/evaluations/{evaluation_id}/human-ratings",
                         data={"file": (io.BytesIO(data), name)}, content_type="multipart/form-data")
    if answer.status_code == 202:
        assert wait_rescored(client, evaluation_id)["status"] == "done"
    return answer


def human_of(client, evaluation_id: str) -> dict:
    """The result's agreement with people (agreement.human)."""
    return client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]["agreement"]["human"]


def panel_evaluation(client, judge_server) -> str:
    judge_server.models = {"judge-b": (10, True)}  # judge-b: every total +10, every verdict the opposite
    upload_id = upload(client, marked_sessions()).get_json()["id"]
    resp = client.post("/api/evaluations", json={"upload_id": upload_id,
                                                 "judges": [{"model": "judge-a"}, {"model": "judge-b"}]})
    done = wait_for(client, resp.get_json()["id"])
    assert done["status"] == "done", done
    return done["id"]


def test_people_who_rate_exactly_like_one_judge(client, judge_server):
    evaluation_id = panel_evaluation(client, judge_server)
    rated = replies()[:-2]  # people rated all but the last round's two replies
    # People give judge-a's totals and verdicts; the style column is the local judge's split of the total.
    resp = attach(client, evaluation_id, ratings_csv([(s, k, m, t, v, -(-t // 5)) for s, k, m, t, v in rated]))
    assert resp.status_code == 202, resp.get_json()
    human = human_of(client, evaluation_id)
    assert human["ratings"] == len(rated) and human["rated"] == ["total", "verdict", "style"]
    a, b, panel = (human["by_rater"][k] for k in ("judge-a", "judge-b", "panel"))
    assert a["total"]["spearman"]["value"] == pytest.approx(1) and a["total"]["alpha"]["value"] == pytest.approx(1)
    assert a["total"]["pearson"]["value"] == pytest.approx(1) and a["total"]["kendall"]["value"] == pytest.approx(1)
    assert a["binary"]["kappa"]["value"] == pytest.approx(1) and a["binary"]["alpha"]["value"] == pytest.approx(1)
    assert a["dimensions"]["style"]["alpha"]["value"] == pytest.approx(1)
    totals = [t for _s, _k, _m, t, _v in rated]
    assert b["total"]["spearman"]["value"] == pytest.approx(1)  # +10 keeps the order
    assert b["total"]["pearson"]["value"] == pytest.approx(1) and b["total"]["kendall"]["value"] == pytest.approx(1)
    assert b["dimensions"]["style"]["pearson"]["n"] == len(rated)
    assert b["total"]["alpha"]["value"] == pytest.approx(naive_interval_alpha([[t, t + 10] for t in totals]))
    keeps = [v for *_rest, v in rated]
    p1 = np.mean(keeps)
    p_e = 2 * p1 * (1 - p1)  # judge-b says 1 exactly where people say 0
    assert b["binary"]["kappa"]["value"] == pytest.approx(-p_e / (1 - p_e))
    assert panel["total"]["alpha"]["value"] == pytest.approx(naive_interval_alpha([[t, t + 5] for t in totals]))
    assert panel["binary"]["kappa"]["n"] == 0 and panel["binary"]["kappa"]["value"] is None  # every reply a tie
    assert a["total"]["spearman"]["n"] == len(rated) and a["total"]["spearman"]["low"] is not None
    ranking = human["ranking"]
    assert ranking["by"] == "total"
    assert ranking["kendall_tau"] == {"judge-a": None, "judge-b": None, "panel": None}  # two methods: no tau
    assert all(ranking["kendall_tau_interval"][label] == {"value": None, "low": None, "high": None, "n": len(rated)}
               for label in ("judge-a", "judge-b", "panel"))
    assert "people" not in human  # one rating per reply
    for method in ("A", "B"):
        mine = [t for _s, _k, m, t, _v in rated if m == method]
        assert ranking["human"]["judge-a"][method] == pytest.approx(np.mean(mine))
        assert ranking["by_rater"]["judge-b"][method] == pytest.approx(np.mean(mine) + 10)
    # The result document, the results file and the page all have it.
    record = client.get(f"/api/evaluations/{evaluation_id}").get_json()
    assert record["status"] == "done" and record["result"]["agreement"]["human"] == human
    assert record["result"]["agreement"]["krippendorff_alpha"]  # the judges' own agreement is kept
    page = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert 'id="human"' in page and f"{len(rated)} ratings from people.csv are attached" in page
    # The attached file downloads in the format it was read in: attaching it again changes nothing.
    downloaded = client.get(f"/evaluations/{evaluation_id}/human-ratings.csv").data
    assert attach(client, evaluation_id, downloaded).status_code == 202 and human_of(client, evaluation_id) == human
    rows = list(csv.DictReader(io.StringIO(client.get(f"/evaluations/{evaluation_id}/agreement.csv")
                                           .data.decode("utf-8-sig"))))
    spearman_b = next(r for r in rows if (r["statistic"], r["score"], r["raters"]) ==
                      ("spearman", "total", "people | judge-b"))
    assert float(spearman_b["value"]) == pytest.approx(1) and int(spearman_b["n"]) == len(rated)
    assert any(r["raters"] == "judge-a | judge-b" for r in rows)  # the judges' own agreement too
    shared = client.get(share_path(create_share(client, evaluation_id))).get_data(as_text=True)
    assert 'id="human"' in shared and 'name="file"' not in shared and "human-ratings.csv" not in shared
    assert client.delete(f"/api/evaluations/{evaluation_id}/human-ratings").status_code == 202
    assert wait_rescored(client, evaluation_id)["status"] == "done"
    assert "human" not in client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]["agreement"]


def test_methods_ranked_by_people_and_by_one_judge(client, judge_server):
    data = jsonl(*(session_line(f"s{i}", 2, methods=("A", "B", "C")) for i in range(3)))
    upload_id = upload(client, data).get_json()["id"]
    done = wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"])
    judged = _judged_totals(client, done["id"])
    # People reverse the judge's order of the methods: their total is 100 minus the judge's.
    rows = [(s, k, m, 100 - t, "", "") for (s, k, m), t in judged.items()]
    assert attach(client, done["id"], ratings_csv(rows)).status_code == 202
    human = human_of(client, done["id"])
    ranking = human["ranking"]
    means = {m: np.mean([t for (_s, _k, mm), t in judged.items() if mm == m]) for m in "ABC"}
    assert ranking["by_rater"]["judge-test"] == pytest.approx(means)
    assert ranking["human"]["judge-test"] == pytest.approx({m: 100 - v for m, v in means.items()})
    assert ranking["kendall_tau"]["judge-test"] == pytest.approx(-1.0)
    # every replicate draws the three methods and reverses them
    assert ranking["kendall_tau_interval"]["judge-test"] == {"value": pytest.approx(-1.0), "low": pytest.approx(-1.0),
                                                             "high": pytest.approx(-1.0), "n": len(rows)}
    total = human["by_rater"]["judge-test"]["total"]
    assert total["spearman"]["value"] == pytest.approx(-1.0)
    assert total["pearson"]["value"] == pytest.approx(-1.0) and total["kendall"]["value"] == pytest.approx(-1.0)
    assert "binary" not in human["by_rater"]["judge-test"] and human["rated"] == ["total"]


def _judged_totals(client, evaluation_id: str) -> dict:
    """(session id, round, method) -> the judge's fine total, from the sessions API."""
    page = client.get(f"/api/evaluations/{evaluation_id}/sessions?per_page=50").get_json()
    return {(s["session_id"], rnd["round"], m): v["fine"]["total"]
            for s in page["sessions"] for rnd in s["rounds"] for m, v in rnd["methods"].items()}


def test_bad_files_and_requests_are_refused_with_nothing_stored(client, judge_server):
    evaluation_id = panel_evaluation(client, judge_server)
    before = client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]
    resp = attach(client, evaluation_id, b"session_id,round,method,total\ns1,1,A,50\ns9,1,A,50\ns1,1,Z,50\n")
    body = resp.get_json()
    assert resp.status_code == 400 and body["error"].startswith("The ratings file has problems")
    assert [(p["line"], p["path"]) for p in body["problems"]] == [(3, "round"), (4, "method")]
    assert client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"] == before
    no_file = client.post(f"/api/evaluations/{evaluation_id}/human-ratings", data={},
                          content_type="multipart/form-data")
    assert no_file.status_code == 400 and "Choose a CSV or JSONL file" in no_file.get_json()["error"]
    assert attach(client, "nope", b"x").status_code == 404
    judge_server.latency_s = 0.5
    upload_id = upload(client, jsonl(session_line("late", 2))).get_json()["id"]
    running = client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"]
    resp = attach(client, running, b"session_id,round,method,total\nlate,1,A,50\n")
    assert resp.status_code == 409 and "once the evaluation has finished" in resp.get_json()["error"]
    client.post(f"/api/evaluations/{running}/cancel")


def test_the_result_page_form_needs_its_token_and_lists_problems(make_app, judge_env, judge_server):
    app = make_app(judge_env, WTF_CSRF_ENABLED=True)
    client = app.test_client()
    upload_id = upload(client, marked_sessions()).get_json()["id"]
    evaluation_id = wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id})
                             .get_json()["id"])["id"]
    html = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
    path = f"/evaluations/{evaluation_id}/human-ratings"
    good = ratings_csv([(s, k, m, t, v, "") for s, k, m, t, v in replies()])
    assert client.post(path, data={"file": (io.BytesIO(good), "p.csv")},
                       content_type="multipart/form-data").status_code == 400  # no CSRF token
    resp = client.post(path, data={"file": (io.BytesIO(b"session_id,round,method,total\ns1,1,A,500\n"), "p.csv"),
                                   "csrf_token": token}, content_type="multipart/form-data")
    page = resp.get_data(as_text=True)
    assert resp.status_code == 400 and "line 2" in page and "&#39;total&#39; must be a number from 0 to 100" in page
    resp = client.post(path, data={"file": (io.BytesIO(good), "p.csv"), "csrf_token": token},
                       content_type="multipart/form-data")
    assert resp.status_code == 302 and resp.headers["Location"].endswith(f"/evaluations/{evaluation_id}#human")
    assert wait_rescored(client, evaluation_id)["status"] == "done"
    assert "Agreement with people" in client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    report = client.get(f"/evaluations/{evaluation_id}/report.html").get_data(as_text=True)
    assert 'id="human"' in report and 'name="file"' not in report
    assert json.loads(client.get(f"/evaluations/{evaluation_id}.json").data)["agreement"]["human"]["ratings"] == 16


# -- several people per reply ----------------------------------------------------------------------

def person(rater, session_id, round_, method, total=None, verdict=None, style=None):
    return {"rater": rater, "session_id": session_id, "round": round_, "method": method, "total": total,
            "verdict": verdict, "style": style}


def test_alpha_among_people_who_rate_the_same_replies():
    rows = [person("ann", "s1", 1, "A", 70, 1, 14), person("bob", "s1", 1, "A", 60, 1, 12),
            person("ann", "s1", 2, "A", 40, 0), person("bob", "s1", 2, "A", 50, 0),
            person("cy", "s1", 2, "A", 45, 1),
            person("ann", "s2", 1, "B", 90, 1), person("cy", "s2", 1, "B", 80, 1),
            person("bob", "s3", 1, "A", 20, 0)]  # rated by one person only: no pair, no weight in alpha
    people = people_alpha(rows, ("style",), n_boot=200)
    # replies x raters (ann, bob, cy), NaN where that person did not rate
    totals = [[70, 60, NAN], [40, 50, 45], [90, NAN, 80], [NAN, 20, NAN]]
    verdicts = [[1, 1, NAN], [0, 0, 1], [1, NAN, 1], [NAN, 0, NAN]]
    assert list(people) == ["total", "verdict", "style"]
    assert people["total"]["value"] == pytest.approx(krippendorff_alpha(totals, "interval"))
    assert people["verdict"]["value"] == pytest.approx(krippendorff_alpha(verdicts, "nominal"))
    # style: one reply rated twice (14, 12), its observed disagreement all there is: alpha 1 - 4 / 4 = 0
    assert people["style"]["value"] == pytest.approx(0.0)
    assert people["total"]["n"] == 3
    krippendorff = pytest.importorskip("krippendorff")
    assert people["total"]["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=np.array(totals, dtype=float).T, level_of_measurement="interval"))
    # Nobody's reply rated twice: no alpha among people.
    assert people_alpha([person("ann", "s1", 1, "A", 70), person("bob", "s1", 2, "A", 60)]) is None


def test_human_agreement_gives_people_only_with_their_own_ratings():
    ratings = [{"session_id": f"s{i}", "round": 1, "method": "A", "total": float(10 * i), "verdict": None}
               for i in range(1, 6)]
    cells = {(i - 1, f"s{i}", 1, "A"): {"total": float(10 * i + i % 2)} for i in range(1, 6)}
    plain = human_agreement(ratings, {"judge": cells}, ["A"], ("style",), n_boot=100)
    assert "people" not in plain
    assert plain["by_rater"]["judge"]["total"]["pearson"]["value"] == pytest.approx(
        np.corrcoef([10, 20, 30, 40, 50], [11, 20, 31, 40, 51])[0, 1])
    rows = [person(name, f"s{i}", 1, "A", 10 * i + shift) for i in range(1, 6) for name, shift in (("a", 0), ("b", 2))]
    both = human_agreement(ratings, {"judge": cells}, ["A"], ("style",), n_boot=100, per_rater=rows)
    assert {k: v for k, v in both.items() if k not in ("people", "scatter")} == {
        k: v for k, v in plain.items() if k != "scatter"}
    # without each person's rows a reply's mean stands for one rating; with them, its raters and their spread
    assert plain["scatter"] == {"rater": "judge", "points": [
        {"session_id": f"s{i}", "round": 1, "method": "A", "judge": 10 * i + i % 2, "people": 10 * i, "raters": 1,
         "low": 10 * i, "high": 10 * i} for i in range(1, 6)]}
    assert [(p["raters"], p["low"], p["high"]) for p in both["scatter"]["points"]] == [
        (2, 10 * i, 10 * i + 2) for i in range(1, 6)]
    assert list(both["people"]) == ["total"]
    expected = krippendorff_alpha([[10 * i, 10 * i + 2] for i in range(1, 6)], "interval")
    assert both["people"]["total"]["value"] == pytest.approx(expected)
