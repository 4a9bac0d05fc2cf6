"""Paired differences of two runs of one file judged by two judges that differ in a known way: the compare page,
/api/compare and paired.csv (web/paired_view.py, kinds/paired_rows.py)."""
from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from scipy.stats import wilcoxon
from statsmodels.stats.multitest import multipletests

from pipeline.housekeeping import delete_evaluation
from tests.conftest import jsonl, session_line, wait_for
from tests.web.test_api import upload
from web import get_results, get_store
from web.compare import load_runs
from web.paired_view import PairedError, paired

SESSIONS = 10
OTHER_JUDGE = "judge-b"


def shifted_judge(reply: str) -> tuple[int, bool]:
    """The other judge: 10 points lower on replies marked "shift", the opposite verdict on those marked "flip"."""
    return (-10 if "shift" in reply else 0), "flip" in reply


def dialogue_file() -> bytes:
    """10 sessions of 2 rounds. A: round 1 shifted (-10), round 2 flipped (keep 1 -> 0). B: round 1 of even
    sessions shifted, keep 0 everywhere and never flipped."""
    sessions = []
    for i in range(SESSIONS):
        s = session_line(f"s{i}", rounds=2)
        s["rounds"][0]["responses"] = {"A": f"A {i} shift [[score={40 + i}]] [[keep=1]]",
                                       "B": f"B {i} {'shift' if i % 2 == 0 else 'same'} [[score={30 + i}]] [[keep=0]]"}
        s["rounds"][1]["responses"] = {"A": f"A {i} flip [[score=50]] [[keep=1]]",
                                       "B": f"B {i} same [[score={60 + i}]] [[keep=0]]"}
        sessions.append(s)
    return jsonl(*sessions)


def evaluate_with(client, upload_id: str, model: str | None = None) -> str:
    body = {"upload_id": upload_id, **({"judge": {"model": model}} if model else {})}
    created = client.post("/api/evaluations", json=body).get_json()
    assert wait_for(client, created["id"])["status"] == "done", created
    return created["id"]


@pytest.fixture
def runs(client, judge_server):
    """(baseline, other, rerun): the file judged by the default judge, by the other judge, by the default again."""
    judge_server.models[OTHER_JUDGE] = (shifted_judge, None)
    upload_id = upload(client, dialogue_file()).get_json()["id"]
    return (evaluate_with(client, upload_id), evaluate_with(client, upload_id, OTHER_JUDGE),
            evaluate_with(client, upload_id))


def rows_by(body: dict) -> dict[tuple[str, str], dict]:
    return {(row["method"], row["metric"]): row for row in body["paired"]}


def bootstrap_ci(cluster_diffs: list[float], n_boot: int = 1000, seed: int = 0) -> list[float]:
    """A plain loop over the resampled sessions (equal session sizes: the mean of the drawn sessions' means)."""
    draws = np.random.default_rng(seed).integers(0, len(cluster_diffs), size=(n_boot, len(cluster_diffs)))
    means = [np.mean([cluster_diffs[j] for j in row]) for row in draws]
    return [float(v) for v in np.percentile(means, [2.5, 97.5])]


def test_api_gives_exactly_the_known_paired_differences(client, runs):
    baseline, other, _ = runs
    resp = client.get(f"/api/compare?ids={baseline}&ids={other}&baseline={baseline}")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    assert set(body) == {"baseline", "runs", "paired", "regression"}
    assert body["baseline"] == baseline and [r["id"] for r in body["runs"]] == [baseline, other]
    assert all(r["label"] for r in body["runs"])
    rows = rows_by(body)
    assert len(body["paired"]) == 14 and {r["run"] for r in body["paired"]} == {other}
    assert set(body["paired"][0]) == {"run", "method", "metric", "baseline_value", "value", "diff", "ci95",
                                      "p_value", "p_holm", "p_bh", "n_pairs", "test", "mdd"}

    # A: -10 on round 1, 0 on round 2: -5 in every session, so the interval is [-5, -5]
    a = rows[("A", "avg")]
    assert a["n_pairs"] == 20 and a["test"] == "wilcoxon"
    assert a["baseline_value"] == pytest.approx(np.mean([40 + i for i in range(10)] + [50] * 10))
    assert a["diff"] == pytest.approx(-5.0) and a["ci95"] == pytest.approx([-5.0, -5.0])
    assert a["p_value"] == pytest.approx(wilcoxon([-5.0] * SESSIONS).pvalue)
    assert a["mdd"] is None  # no spread between sessions
    # A's verdicts: round 2 flips 1 -> 0 in all ten sessions: McNemar with 10 lost, 0 gained
    keep = rows[("A", "binary_rate")]  # the result's binary rate: in %
    assert keep["test"] == "mcnemar" and keep["n_pairs"] == 20
    assert keep["baseline_value"] == 100.0 and keep["value"] == 50.0 and keep["diff"] == -50.0
    assert keep["p_value"] == pytest.approx(2 * 0.5 ** 10)
    from statsmodels.stats.contingency_tables import mcnemar
    assert keep["p_value"] == pytest.approx(mcnemar([[10, 10], [0, 0]], exact=True).pvalue)
    # B: even sessions -10 on round 1 (session mean -5), odd ones unchanged
    b = rows[("B", "avg")]
    cluster_diffs = [-5.0 if i % 2 == 0 else 0.0 for i in range(SESSIONS)]
    assert b["diff"] == pytest.approx(-2.5) and b["n_pairs"] == 20
    assert b["ci95"] == pytest.approx(bootstrap_ci(cluster_diffs))
    assert b["p_value"] == pytest.approx(wilcoxon(cluster_diffs).pvalue)
    assert rows[("B", "binary_rate")]["diff"] == 0.0 and rows[("B", "binary_rate")]["p_value"] is None
    # the five dimensions split the total: their differences sum to AVG's
    dims = ("style", "content", "naturalness", "personalization", "conversation")
    assert sum(rows[("A", d)]["diff"] for d in dims) == pytest.approx(-5.0)
    # Holm and BH over every row with a p-value, as statsmodels computes them
    tested = [r for r in body["paired"] if r["p_value"] is not None]
    p = [r["p_value"] for r in tested]
    assert [r["p_holm"] for r in tested] == pytest.approx(list(multipletests(p, method="holm")[1]))
    assert [r["p_bh"] for r in tested] == pytest.approx(list(multipletests(p, method="fdr_bh")[1]))
    assert all(r["p_holm"] is None for r in body["paired"] if r["p_value"] is None)
    # AVG of A drops significantly (CI [-5, -5], corrected p below 0.05); a drop of more than 6 is not seen
    assert body["regression"] is True
    again = client.get(f"/api/compare?ids={baseline}&ids={other}&max_drop=6").get_json()
    assert again["regression"] is False and again["paired"] == body["paired"]  # the same seed, the same answer
    assert client.get(f"/api/compare?ids={baseline}&ids={other}&metric=binary_rate").get_json()["regression"] is True


def test_a_rerun_with_the_same_judge_has_no_difference(client, runs):
    baseline, _, rerun = runs
    body = client.get(f"/api/compare?ids={baseline}&ids={rerun}").get_json()
    assert body["regression"] is False
    assert all(r["diff"] == 0 and r["ci95"] == [0.0, 0.0] for r in body["paired"])


def test_the_baseline_can_be_any_run_and_errors_are_json(client, runs):
    baseline, other, _ = runs
    body = client.get(f"/api/compare?ids={baseline}&ids={other}&baseline={other}&correction=bh").get_json()
    assert body["baseline"] == other and rows_by(body)[("A", "avg")]["diff"] == pytest.approx(5.0)
    assert body["regression"] is False
    for query, status in ((f"ids={baseline}&ids={other}&baseline=nope", 400),
                          (f"ids={baseline}&ids={other}&correction=bonferroni", 400),
                          (f"ids={baseline}&ids={other}&metric=nope", 400),
                          (f"ids={baseline}&ids={other}&max_drop=x", 400),
                          (f"ids={baseline}", 400), (f"ids={baseline}&ids=missing", 404)):
        resp = client.get(f"/api/compare?{query}")
        assert resp.status_code == status and resp.get_json()["error"], query
    assert "avg, binary_rate, style" in client.get(f"/api/compare?ids={baseline}&ids={other}&metric=nope").get_json()["error"]


def test_compare_page_shows_the_paired_table_and_paired_csv(client, runs):
    baseline, other, _ = runs
    html = client.get(f"/compare?ids={baseline}&ids={other}").get_data(as_text=True)
    assert 'id="paired"' in html and "Paired differences" in html and "mcnemar" in html
    assert "[-5.000, -5.000]" in html and f"/compare/paired.csv?ids={baseline}&amp;ids={other}" in html
    assert "session by session here" not in html
    assert client.get(f"/compare?ids={baseline}&ids={other}&baseline=nope").status_code == 400
    resp = client.get(f"/compare/paired.csv?ids={baseline}&ids={other}&baseline={baseline}")
    assert resp.status_code == 200 and resp.mimetype == "text/csv"
    table = list(csv.DictReader(io.StringIO(resp.get_data(as_text=True).lstrip("\ufeff"))))
    api = client.get(f"/api/compare?ids={baseline}&ids={other}").get_json()["paired"]
    assert len(table) == len(api) == 14
    assert [(r["method"], r["metric"], float(r["diff"])) for r in table] == [
        (r["method"], r["metric"], pytest.approx(r["diff"])) for r in api]
    a = next(r for r in table if (r["method"], r["metric"]) == ("A", "avg"))
    assert float(a["ci95_low"]) == float(a["ci95_high"]) == -5.0 and a["n_pairs"] == "20"


def test_runs_that_share_no_sample_say_so(client):
    from tests.web.test_share import evaluate
    first = evaluate(client, jsonl(session_line("x1")), name="x.jsonl")
    second = evaluate(client, jsonl(session_line("y1")), name="y.jsonl")
    html = client.get(f"/compare?ids={first}&ids={second}").get_data(as_text=True)
    assert "These runs share no samples: no paired differences." in html and "paired.csv" not in html
    body = client.get(f"/api/compare?ids={first}&ids={second}").get_json()
    assert body["paired"] == [] and body["regression"] is False


def test_a_run_deleted_after_the_runs_were_read_is_named(app, runs):
    """paired() reads each run's samples after load_runs read the runs (the compare page, /api/compare, the gate):
    a run deleted in between is named, not a crash."""
    baseline, other, _rerun = runs
    with app.test_request_context():
        loaded = load_runs([baseline, other])
        delete_evaluation(get_store(), get_results(), other)
        with pytest.raises(PairedError, match=f"^No evaluation has the id {other}.$"):
            paired(loaded, baseline)
