"""Everything downstream of the judge follows the evaluation's rubric (issue 37, item 4): a lab's three-dimension 1-7
rubric with a yes/no question of its own, and a one-dimension rubric without one, each judged end to end over HTTP
by the local judge server (which answers a rubric's JSON questions from the replies' [[dims=...]] and [[keep=...]]
markers); the numbers are computed here from those markers."""
from __future__ import annotations

import csv
import io
import json
import re

import pytest

from tests.conftest import jsonl, wait_for, wait_rescored
from tests.kinds.dialogue import rubric_cases as cases

# The judge's answers, by session, method and round: THREE's three scores 1-7 and its yes/no answer.
THREE_ANSWERS = {
    "s1": {"A": [((7, 6, 5), 1), ((1, 2, 3), 0)], "B": [((4, 4, 4), 1), ((2, 2, 2), 1)]},
    "s2": {"A": [((7, 7, 7), 1), ((4, 5, 6), 1)], "B": [((1, 1, 1), 0), ((3, 4, 5), 0)]},
}
KEYS = ("consistency", "warmth", "helpfulness")


def three_file(answers: dict = THREE_ANSWERS) -> bytes:
    return jsonl(*(cases.marked(sid, {m: [f"[[dims={','.join(map(str, d))}]] [[keep={k}]]" for d, k in rounds]
                                      for m, rounds in per_method.items()}, 2)
                   for sid, per_method in answers.items()))


def one_file(scores: dict[str, dict[str, list[int]]]) -> bytes:
    return jsonl(*(cases.marked(sid, {m: [f"[[dims={v}]]" for v in values] for m, values in per_method.items()},
                                len(next(iter(per_method.values()))))
                   for sid, per_method in scores.items()))


def upload(client, data: bytes, name: str = "lab.jsonl") -> str:
    resp = client.post("/api/uploads", data={"file": (io.BytesIO(data), name)}, content_type="multipart/form-data")
    assert resp.status_code == 201, resp.get_json()
    return resp.get_json()["id"]


def evaluate(client, upload_id: str, **options) -> str:
    resp = client.post("/api/evaluations", json={"upload_id": upload_id, **options})
    assert resp.status_code == 202, resp.get_json()
    body = wait_for(client, resp.get_json()["id"])
    assert body["status"] == "done", body
    return body["id"]


def figures_of(html: str) -> dict:
    return json.loads(re.search(r'<script id="figures" type="application/json"[^>]*>(.*?)</script>', html, re.S)[1])


def csv_rows(client, url: str) -> list[list[str]]:
    resp = client.get(url)
    assert resp.status_code == 200, url
    return list(csv.reader(io.StringIO(resp.get_data(as_text=True).lstrip("\ufeff"))))


def headline(scores) -> float:
    """THREE's headline of one answer, by its declaration: the mean of the three 1-7 scores, from 1..7 to 0..100."""
    return 100 * (sum(scores) / 3 - 1) / 6


def mean(values) -> float:
    return sum(values) / len(values)


@pytest.fixture
def three(app, client):
    cases.add(app, cases.THREE)
    return evaluate(client, upload(client, three_file()), rubric="lab-three")


def test_a_three_dimension_rubric_scores_every_figure_on_its_own_terms(client, three):
    result = client.get(f"/api/evaluations/{three}").get_json()["result"]
    assert result["rubric"]["id"] == "lab-three" and [d["key"] for d in result["rubric"]["dimensions"]] == list(KEYS)
    assert result["rubric"]["headline"] == "100 x (mean(consistency, warmth, helpfulness) - 1) / 6"
    for method in ("A", "B"):
        m = result["methods"][method]
        answers = [THREE_ANSWERS[s][method] for s in ("s1", "s2")]
        by_round = [[a[k] for a in answers] for k in range(2)]  # round k: each session's (scores, keep)
        al = [mean([headline(scores) for scores, _keep in rnd]) for rnd in by_round]
        assert [p["value"] for p in m["al_curve"]] == pytest.approx(al)
        assert m["avg"] == pytest.approx(mean(al))
        assert m["dimensions"] == pytest.approx({key: mean([scores[i] for rnd in by_round for scores, _k in rnd])
                                                 for i, key in enumerate(KEYS)})
        assert list(m["dimension_curves"]) == list(KEYS)
        for i, key in enumerate(KEYS):
            assert [p["value"] for p in m["dimension_curves"][key]] == pytest.approx(
                [mean([scores[i] for scores, _k in rnd]) for rnd in by_round])
        assert [p["value"] for p in m["binary_curve"]] == pytest.approx([100 * mean([k for _s, k in rnd])
                                                                         for rnd in by_round])
        assert m["binary_rate"] == pytest.approx(100 * mean([k for rnd in by_round for _s, k in rnd]))
    # A: headlines 83.3 and 100 at round 1, 16.7 and 66.7 at round 2; consistency 7, 1, 7, 4
    assert result["methods"]["A"]["avg"] == pytest.approx(200 / 3)
    assert result["methods"]["A"]["dimensions"]["consistency"] == pytest.approx(4.75)
    assert {c["metric"] for c in result["comparisons"]} == {"fine", "binary"}


def test_the_pages_show_the_rubric_its_dimensions_and_its_question(client, three):
    html = client.get(f"/evaluations/{three}").get_data(as_text=True)
    assert "Lab three" in html and "100 x (mean(consistency, warmth, helpfulness) - 1) / 6" in html
    result = client.get(f"/api/evaluations/{three}").get_json()["result"]
    assert result["rubric"]["sha256"][:12] in html
    assert "Consistency (1-7), Warmth (1-7), Helpfulness (1-7)" in html
    assert "Share of yes: Would recommend?" in html and "Keep-chatting rate" not in html
    radar = figures_of(html)["radar"]
    assert [t["type"] for t in radar["data"]] == ["scatterpolar", "scatterpolar"]
    a = radar["data"][0]
    assert a["theta"] == ["Consistency", "Warmth", "Helpfulness", "Consistency"]
    # A's means 4.75, 5.0, 5.25 on 1-7, as 0-100
    assert a["r"] == pytest.approx([100 * (v - 1) / 6 for v in (4.75, 5.0, 5.25, 4.75)])
    assert figures_of(html)["binary_curve"]["layout"]["title"]["text"] == "BAR(k): share of yes to Would recommend?"
    # the by-round table: AL(k), BAR(k) and each dimension's mean by round on its scale (A's consistency: 7, then 2.5)
    rounds = html[html.index('id="rounds"'):html.index("</table>", html.index('id="rounds"'))]
    assert "Consistency <small" in rounds and "(1-7)" in rounds and "<td>7.00</td>" in rounds and "<td>2.50</td>" in rounds
    assert 'name="cols" value="dims"' in html
    # in Chinese, the rubric's own labels
    client.set_cookie("lang", "zh")
    zh = client.get(f"/evaluations/{three}").get_data(as_text=True)
    assert figures_of(zh)["radar"]["data"][0]["theta"][:3] == ["一致性", "温暖", "有用性"] and "会推荐吗？" in zh


def test_the_grid_a_judgment_and_a_session_follow_the_rubric(client, three):
    grid = f"/evaluations/{three}/view/grid"
    html = client.get(grid).get_data(as_text=True)
    assert "Consistency 7 · Warmth 6 · Helpfulness 5" in html  # s1, round 1, A
    assert 'value="consistency:A"' in html and 'value="binary:A"' in html and "Would recommend?" in html
    # sorted by A's consistency, lowest first: s1 r2 (1), s2 r2 (4), then the two 7s in file order
    order = re.findall(r'<th scope="row"><a [^>]*>(s\d)</a></th>\s*<td>(\d)</td>',
                       client.get(grid + "?sort=consistency:A&order=asc").get_data(as_text=True))
    assert order == [("s1", "2"), ("s2", "2"), ("s1", "1"), ("s2", "1")]
    page = client.get(f"/evaluations/{three}/view/prompt?index=0&round=1&method=A&mode=fine").get_data(as_text=True)
    assert re.search(r"Consistency: <strong>7\.00</strong> <span class=\"hint\">\(1-7\)</span>", page)
    assert "Lab three 1" in page
    verdict = client.get(f"/evaluations/{three}/view/prompt?index=0&round=2&method=A&mode=binary").get_data(
        as_text=True)
    assert "<dt>Would recommend?</dt><dd>no</dd>" in verdict
    session = client.get(f"/evaluations/{three}/view/session?index=0").get_data(as_text=True)
    assert "(Consistency 7, Warmth 6, Helpfulness 5)" in session and "Would recommend?" in session


def test_the_csvs_have_one_column_per_dimension_key(client, three):
    rows = csv_rows(client, f"/evaluations/{three}.csv")
    assert rows[0] == ["method", "avg", "ci95_avg_low", "ci95_avg_high", "slope", "intercept", "r2", "n_ir", "n_r2",
                       "binary_rate", "ci95_binary_rate_low", "ci95_binary_rate_high", "binary_avg", "binary_n_ir",
                       "binary_n_r2", *KEYS, "sessions", "judged", "unparsed", "failed"]
    a = dict(zip(rows[0], rows[1]))
    assert float(a["consistency"]) == pytest.approx(4.75) and float(a["helpfulness"]) == pytest.approx(5.25)
    judgments = csv_rows(client, f"/evaluations/{three}/judgments.csv")
    assert judgments[0][:9] == ["session_id", "round", "method", "mode", "status", "total", *KEYS]
    first = dict(zip(judgments[0], judgments[1]))  # s1, round 1, A, binary then fine (key order)
    fine = next(dict(zip(judgments[0], row)) for row in judgments[1:] if row[:4] == ["s1", "1", "A", "fine"])
    assert (fine["consistency"], fine["warmth"], fine["helpfulness"]) == ("7", "6", "5") and fine["scores"] == ""
    assert float(fine["total"]) == pytest.approx(headline((7, 6, 5))) and first["session_id"] == "s1"


def test_the_offline_report_and_the_bundle_follow_the_rubric(client, three, runner, tmp_path):
    report = client.get(f"/evaluations/{three}/report.html").get_data(as_text=True)
    assert "Lab three" in report and figures_of(report)["radar"]["data"][0]["theta"][0] == "Consistency"
    assert "Share of yes: Would recommend?" in report
    out = tmp_path / "bundle"
    made = runner.invoke(args=["bundle", three, "--out", str(out)])
    assert made.exit_code == 0, made.output
    assert "Consistency (1-7)" in (out / f"{three}.html").read_text(encoding="utf-8")


def test_a_rubric_without_a_yes_no_question_has_no_binary_figures(app, client):
    cases.add(app, cases.ONE)
    scores = {"s1": {"A": [8, 6], "B": [3, 5]}, "s2": {"A": [10, 4], "B": [2, 2]}}
    evaluation = evaluate(client, upload(client, one_file(scores)), rubric="lab-one")
    result = client.get(f"/api/evaluations/{evaluation}").get_json()["result"]
    assert result["rubric"]["binary"] is None and result["rubric"]["headline"] == "100 x sum(fit) / 10"
    for method in ("A", "B"):
        m = result["methods"][method]
        al = [mean([10 * scores[s][method][k] for s in scores]) for k in range(2)]  # fit 0-10 as 0-100
        assert [p["value"] for p in m["al_curve"]] == pytest.approx(al) and m["avg"] == pytest.approx(mean(al))
        assert m["dimensions"] == {"fit": pytest.approx(mean([v for s in scores for v in scores[s][method]]))}
        assert m["binary_curve"] is None and m["binary_rate"] is None and m["ci95"]["binary_rate"] is None
        assert m["judged"] == m["judged_fine"] == 4 and m["judged_binary"] == 0
    assert {c["metric"] for c in result["comparisons"]} == {"fine"}
    assert all(s["methods"]["A"]["binary"] is None for s in result["sessions"])

    html = client.get(f"/evaluations/{evaluation}").get_data(as_text=True)
    assert "No yes/no question: the rubric Lab one 1" in html and 'data-figure="binary_curve"' not in html
    figures = figures_of(html)
    assert "binary_curve" not in figures and [t["type"] for t in figures["radar"]["data"]] == ["bar", "bar"]
    assert figures["radar"]["data"][0]["x"] == ["Fit"] and figures["radar"]["data"][0]["y"] == [pytest.approx(70)]
    assert 'value="binary_rate"' not in html and "BAR(k)" not in html.split('id="rounds"')[1].split("</table>")[0]
    header = csv_rows(client, f"/evaluations/{evaluation}.csv")[0]
    assert header == ["method", "avg", "ci95_avg_low", "ci95_avg_high", "slope", "intercept", "r2", "n_ir", "n_r2",
                      "fit", "sessions", "judged", "unparsed", "failed"]
    grid = client.get(f"/evaluations/{evaluation}/view/grid").get_data(as_text=True)
    assert "binary:A" not in grid and "Fit 8" in grid and "mode=binary" not in grid
    assert client.get(f"/evaluations/{evaluation}/view/grid?sort=fit:A").status_code == 200
    # the length bias reads the 0-100 headline: every reply has the same length here but one method's
    assert result["length_bias"]["n"] == 8


def test_a_result_kept_before_rubrics_reads_as_personasteer(app, client):
    evaluation = evaluate(client, upload(client, jsonl(cases.marked("s1", {"A": ["[[score=60]]"], "B": ["x"]}, 1))))
    with app.app_context():
        from web import get_store

        store = get_store()
        record = store.get_evaluation(evaluation)
        old = {k: v for k, v in record["result"].items() if k != "rubric"}
        store.set_result(evaluation, old)
        assert "rubric" not in store.get_evaluation(evaluation)["result"]
    html = client.get(f"/evaluations/{evaluation}").get_data(as_text=True)
    assert "PersonaSteer" in html and "Keep-chatting rate" in html and "Style (0-20)" in html
    assert figures_of(html)["radar"]["data"][0]["theta"][0] == "Style"
    assert csv_rows(client, f"/evaluations/{evaluation}.csv")[0][15:20] == ["style", "content", "naturalness",
                                                                            "personalization", "conversation"]


# -- comparing runs: per dimension under one rubric, on the headline only across rubrics ---------------------------

def compare_answers(drop: int = 0) -> dict:
    """Twelve sessions of two rounds (enough for a drop on every reply to be significant after Holm's correction);
    A's consistency `drop` points lower than the baseline's on every reply."""
    answers = {}
    for i in range(12):
        answers[f"s{i}"] = {"A": [((4 + i % 2 - drop, 5, 6), 1), ((5 - drop, 4, 3 + i % 3), i % 2)],
                            "B": [((3, 3, 3), 0), ((2 + i % 2, 6, 6), 1)]}
    return answers


@pytest.fixture
def compared(app, client):
    """(baseline, worse, other rubric): the file under THREE; A's consistency 2 lower, under THREE; the first file
    under ONE (whose one score is a reply's first [[dims]] value)."""
    cases.add(app, cases.THREE)
    cases.add(app, cases.ONE)
    first = upload(client, three_file(compare_answers()))
    return (evaluate(client, first, rubric="lab-three"),
            evaluate(client, upload(client, three_file(compare_answers(2)), "worse.jsonl"), rubric="lab-three"),
            evaluate(client, first, rubric="lab-one"))


def test_runs_under_one_rubric_pair_on_every_dimension(client, compared):
    baseline, worse, _other = compared
    body = client.get(f"/api/compare?ids={baseline},{worse}&baseline={baseline}").get_json()
    rows = {(r["method"], r["metric"]): r for r in body["paired"]}
    assert {metric for _m, metric in rows} == {"avg", "binary_rate", *KEYS}
    a = rows[("A", "consistency")]
    consistency = [scores[0] for s in compare_answers().values() for scores, _k in s["A"]]
    assert a["baseline_value"] == pytest.approx(mean(consistency)) and a["value"] == pytest.approx(mean(consistency) - 2)
    assert a["diff"] == pytest.approx(-2) and a["ci95"] == pytest.approx([-2, -2]) and a["n_pairs"] == 24
    assert rows[("A", "avg")]["diff"] == pytest.approx(-100 * (2 / 3) / 6)  # the mean of three drops by 2/3 of a point
    assert rows[("A", "warmth")]["diff"] == 0 and rows[("B", "consistency")]["diff"] == 0
    assert rows[("A", "binary_rate")]["diff"] == 0
    regressed = client.get(f"/api/compare?ids={baseline},{worse}&baseline={baseline}&metric=consistency").get_json()
    assert regressed["regression"] is True
    assert client.get(f"/api/compare?ids={baseline},{worse}&metric=warmth").get_json()["regression"] is False
    html = client.get(f"/compare?ids={baseline},{worse}").get_data(as_text=True)
    assert 'id="rubrics-differ"' not in html and "Share of yes: Would recommend?" in html
    assert "<td>Consistency</td>" in html and 'data-figure="binary_curve"' in html
    diff = client.get(f"/compare/rows?ids={baseline},{worse}&baseline={baseline}&metric=consistency")
    assert diff.status_code == 200 and "Consistency" in diff.get_data(as_text=True)


def test_runs_under_different_rubrics_compare_on_the_headline_only(client, compared):
    baseline, _worse, other = compared
    ids = f"ids={baseline},{other}&baseline={baseline}"
    body = client.get(f"/api/compare?{ids}").get_json()
    assert {row["metric"] for row in body["paired"]} == {"avg"}
    results = {i: client.get(f"/api/evaluations/{i}").get_json()["result"] for i in (baseline, other)}
    for row in body["paired"]:
        assert row["baseline_value"] == pytest.approx(results[baseline]["methods"][row["method"]]["avg"])
        assert row["value"] == pytest.approx(results[other]["methods"][row["method"]]["avg"])
    # ONE's headline of a reply is 10 x its first score: A's AVG is the mean over rounds of those
    first = [[10 * s["A"][k][0][0] for s in compare_answers().values()] for k in range(2)]
    assert results[other]["methods"]["A"]["avg"] == pytest.approx(mean([mean(r) for r in first]))
    refused = client.get(f"/api/compare?{ids}&metric=consistency")
    assert refused.status_code == 400
    assert refused.get_json()["error"] == "These runs do not pair on consistency; they pair on: avg."
    html = client.get(f"/compare?{ids}").get_data(as_text=True)
    notice = html[html.index('id="rubrics-differ"'):html.index("</div>", html.index('id="rubrics-differ"'))]
    assert "judged under different rubrics" in notice and "headline score (AVG, 0-100) only" in notice
    for run in (baseline, other):
        rubric = results[run]["rubric"]
        assert f"{rubric['title']['en']} 1 ({rubric['sha256'][:12]})" in notice
    assert 'data-figure="binary_curve"' not in html and "Share of yes" not in html
    assert [row[2] for row in csv_rows(client, f"/compare/paired.csv?{ids}")[1:]] == ["avg", "avg"]


# -- the CI gate on a dimension --------------------------------------------------------------------------------------

def test_the_ci_gate_reads_a_dimension_of_the_rubric(app, runner, tmp_path):
    cases.add(app, cases.THREE)
    cases.add(app, cases.ONE)
    base, worse = tmp_path / "base.jsonl", tmp_path / "worse.jsonl"
    base.write_bytes(three_file(compare_answers()))
    worse.write_bytes(three_file(compare_answers(2)))
    first = runner.invoke(args=["score", str(base), "--rubric", "lab-three"])
    assert first.exit_code == 0, first.output
    baseline = re.search(r"evaluation (\w+)", first.stderr)[1]
    gated = runner.invoke(args=["score", str(worse), "--rubric", "lab-three", "--baseline", baseline, "--metric",
                                "consistency", "--fail-on-regression"])
    assert gated.exit_code == 1, gated.output
    assert "regression: A consistency -2.000, 95% CI [-2.000, -2.000]" in gated.stderr
    assert "regression: B" not in gated.stderr
    fine = runner.invoke(args=["score", str(worse), "--rubric", "lab-three", "--baseline", baseline, "--metric",
                               "warmth", "--fail-on-regression"])
    assert fine.exit_code == 0, fine.output
    # a name no metric of the baseline has is refused before any judging
    unknown = runner.invoke(args=["score", str(worse), "--rubric", "lab-three", "--baseline", baseline, "--metric",
                                  "style", "--fail-on-regression"])
    assert unknown.exit_code == 2 and "Unknown metric style; the metrics of dialogue are: avg, binary_rate, " \
                                      "consistency, warmth, helpfulness." in unknown.stderr
    assert "evaluation " not in unknown.stderr
    # judged under another rubric than the baseline, the runs pair on the headline only
    other = runner.invoke(args=["score", str(worse), "--rubric", "lab-one", "--baseline", baseline, "--metric",
                                "consistency", "--fail-on-regression"])
    assert other.exit_code == 2, other.output
    assert "These runs do not pair on consistency; they pair on: avg." in other.stderr


# -- people's ratings on the rubric's dimensions and scales ---------------------------------------------------------

def attach(client, evaluation_id: str, text: str, name: str = "ratings.csv"):
    """POST a ratings file; once accepted (202), wait until the rescore job it started is over."""
    answer = client.post(f"/api/evaluations/{evaluation_id}/human-ratings",
                         data={"file": (io.BytesIO(text.encode("utf-8")), name)}, content_type="multipart/form-data")
    if answer.status_code == 202:
        assert wait_rescored(client, evaluation_id)["status"] == "done"
    return answer


def human_of(client, evaluation_id: str) -> dict:
    """The result's agreement with people (agreement.human)."""
    return client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]["agreement"]["human"]


def test_people_rate_on_the_rubric_dimensions_and_scales(client, three):
    bad = attach(client, three, "session_id,round,method,consistency\ns1,1,A,8\n")
    assert bad.status_code == 400
    assert bad.get_json()["problems"][0]["message"] == "Line 2: 'consistency' must be a number from 1 to 7, found 8."
    style = attach(client, three, "session_id,round,method,style\ns1,1,A,10\n")
    assert style.status_code == 400 and "consistency, warmth, helpfulness" in style.get_json()["problems"][0]["message"]
    # people agree with the judge's consistency on every reply but one, and rate warmth the other way round
    rows = ["session_id,round,method,consistency,warmth,binary"]
    for sid, per_method in THREE_ANSWERS.items():
        for method, rounds in per_method.items():
            for k, (scores, keep) in enumerate(rounds, start=1):
                rows.append(f"{sid},{k},{method},{scores[0]},{8 - scores[1]},{keep}")
    made = attach(client, three, "\n".join(rows) + "\n")
    assert made.status_code == 202, made.get_json()
    human = human_of(client, three)
    assert human["rated"] == ["verdict", "consistency", "warmth"]
    figures = human["by_rater"]["judge-test"]
    assert figures["dimensions"]["consistency"]["spearman"]["value"] == pytest.approx(1)
    assert figures["dimensions"]["warmth"]["spearman"]["value"] == pytest.approx(-1)
    assert figures["binary"]["kappa"]["value"] == pytest.approx(1)
    download = csv_rows(client, f"/evaluations/{three}/human-ratings.csv")
    assert download[0] == ["rater", "session_id", "round", "method", "total", "binary", *KEYS]
    assert download[1] == ["ratings.csv", "s1", "1", "A", "", "1", "7.0", "2.0", ""]
    page = client.get(f"/evaluations/{three}").get_data(as_text=True)
    assert "<td>Warmth</td>" in page and "consistency (1-7), warmth (1-7), helpfulness (1-7)" in page


def test_without_a_yes_no_question_a_binary_rating_is_ignored(app, client):
    cases.add(app, cases.ONE)
    evaluation = evaluate(client, upload(client, one_file({"s1": {"A": [8, 6], "B": [3, 5]}})), rubric="lab-one")
    made = attach(client, evaluation, "session_id,round,method,fit,binary\ns1,1,A,8,1\ns1,2,A,6,0\ns1,1,B,3,1\n")
    assert made.status_code == 202, made.get_json()
    assert human_of(client, evaluation)["rated"] == ["fit"]
    assert csv_rows(client, f"/evaluations/{evaluation}/human-ratings.csv")[0] == ["rater", "session_id", "round",
                                                                                  "method", "total", "fit"]


# -- a panel and repeated samples under a rubric ---------------------------------------------------------------------

def test_a_panel_agrees_and_samples_vary_over_the_rubric_dimensions(app, client):
    cases.add(app, cases.THREE)
    evaluation = evaluate(client, upload(client, three_file()), rubric="lab-three", samples=2,
                          judges=[{"model": "a", "temperature": 0.7}, {"model": "b", "temperature": 0.7}])
    result = client.get(f"/api/evaluations/{evaluation}").get_json()["result"]
    assert list(result["agreement"]["krippendorff_alpha"]) == ["total", "binary", *KEYS]
    # both judges give the same answers: perfect agreement, and no spread between a judge's two samples
    assert result["agreement"]["krippendorff_alpha"]["consistency"]["value"] == pytest.approx(1)
    assert result["consistency"]["by_judge"]["a"]["A"]["dimension_sd"] == {key: 0.0 for key in KEYS}
    html = client.get(f"/evaluations/{evaluation}").get_data(as_text=True)
    assert "Standard deviation of Consistency" in html and "Share of yes: Would recommend?" in html
    judges = csv_rows(client, f"/evaluations/{evaluation}/judges.csv")
    assert judges[0][:2] == ["judge", "method"] and judges[0][-7:-4] == list(KEYS)
    a_of_judge_b = dict(zip(judges[0], next(row for row in judges if row[:2] == ["b", "A"])))
    assert float(a_of_judge_b["consistency"]) == pytest.approx(4.75)  # judge b's A, as THREE_ANSWERS gives it


def test_ratings_attached_before_rubrics_keep_their_dimensions(tmp_path):
    from sqlalchemy import create_engine

    from kinds import registry
    from kinds.dialogue import rating_store
    from storage import migrations
    from storage.database import database_url
    from storage.store import Store

    path = tmp_path / "old.sqlite"
    engine = create_engine(database_url(str(path)))
    before = [step.version for step in migrations.steps(registry.tables()) if step.version < 17]
    assert migrations.migrate(engine, up_to=16, tables=registry.tables()) == before
    with engine.begin() as con:  # a rating as the code before step 17 kept it, its style in its own column
        con.exec_driver_sql("INSERT INTO human_ratings (evaluation_id, line, session_id, round, method, total, verdict,"
                            " style, content) VALUES ('e1', 2, 's1', 1, 'A', 70, 1, 14, NULL)")
    engine.dispose()
    store = Store(str(path), registry.tables())  # as the app opens it, with the kinds' tables
    assert store.migrated == [step.version for step in migrations.steps(registry.tables()) if step.version >= 17]
    # step 19 moved it into people_ratings, the rater "file" (no file name was kept)
    assert rating_store.human_ratings(store, "e1") == [{"line": 2, "session_id": "s1", "round": 1, "method": "A",
                                                        "total": 70.0, "verdict": 1, "style": 14.0, "raters": 1}]
    assert [r["rater"] for r in rating_store.people_ratings(store, "e1")] == ["file"]
    rating_store.add_ratings(store, "e2", [{"line": 2, "rater": "r.csv", "session_id": "s1", "round": 1,
                                            "method": "A", "total": None, "verdict": None, "warmth": 3.5}], "file")
    assert rating_store.human_ratings(store, "e2") == [{"line": 2, "session_id": "s1", "round": 1, "method": "A",
                                                        "total": None, "verdict": None, "warmth": 3.5, "raters": 1}]
