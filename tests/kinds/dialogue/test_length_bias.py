"""The dialogue result's length bias: correlation of fine scores with reply length, and differences at equal length,
from an evaluation whose replies' lengths and scores are built here (the local judge reads the [[score=..]] marks)."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import statsmodels.formula.api as smf

from kinds.dialogue.length_bias import POINTS_PER_METHOD, _spread
from tests.conftest import jsonl, session_line
from tests.web.test_share import create_share, evaluate, share_path


def reply(method: str, words: int, score: int) -> str:
    return f"{method} " + "word " * words + f"[[score={score}]] [[keep=1]]"


# Method B is longer and scores higher; at equal length it is 4 points better than A (score = 30 + words + 4 [B]).
PLAN = {"A": [(5, 35), (10, 40), (20, 50), (30, 60)], "B": [(25, 59), (35, 69), (40, 74), (50, 84)]}


def sessions() -> list[dict]:
    out = []
    for i in range(4):
        s = session_line(f"s{i}", rounds=1)
        s["rounds"][0]["responses"] = {m: reply(m, *PLAN[m][i]) for m in PLAN}
        out.append(s)
    return out


def test_length_bias_numbers_page_and_share(client):
    evaluation_id = evaluate(client, jsonl(*sessions()))
    body = client.get(f"/api/evaluations/{evaluation_id}").get_json()
    bias = body["result"]["length_bias"]
    lengths = {m: [len(reply(m, *p)) for p in PLAN[m]] for m in PLAN}
    scores = {m: [p[1] for p in PLAN[m]] for m in PLAN}
    x = np.array(lengths["A"] + lengths["B"], dtype=float)
    y = np.array(scores["A"] + scores["B"], dtype=float)
    assert bias["n"] == 8 and bias["reference"] == "A"
    assert bias["pearson"] == pytest.approx(scipy.stats.pearsonr(x, y)[0])
    assert bias["spearman"] == pytest.approx(scipy.stats.spearmanr(x, y)[0])
    assert bias["raw_differences"]["B"] == pytest.approx(np.mean(scores["B"]) - np.mean(scores["A"]))  # 30.25
    # at equal length: score = 30 + words + 4 [B] and length = 5 words + a constant, so B - A = 4 exactly
    design = np.column_stack([np.ones(8), [0] * 4 + [1] * 4, x])
    coef = np.linalg.lstsq(design, y, rcond=None)[0]
    assert bias["differences"]["B"]["estimate"] == pytest.approx(coef[1]) == pytest.approx(4.0)
    assert bias["length_slope"]["estimate"] == pytest.approx(0.2)  # 1 point per word of 5 characters
    assert sorted(map(tuple, bias["points"]["B"])) == sorted(zip(lengths["B"], map(float, scores["B"])))
    html = client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert 'id="length-bias"' in html and 'data-figure="length"' in html and "Length bias" in html
    assert "adds 20.00 points per 100 characters" in html
    share = create_share(client, evaluation_id)
    assert 'data-figure="length"' in client.get(share_path(share)).get_data(as_text=True)
    only_a = client.get(f"/evaluations/{evaluation_id}?methods=A").get_data(as_text=True)
    assert 'id="length-bias"' in only_a


def test_the_scatter_keeps_an_even_sample():
    points = [(i, float(i % 100)) for i in range(10 * POINTS_PER_METHOD)]
    sample = _spread(points)
    assert len(sample) == POINTS_PER_METHOD and sample[0] == [0, 0.0] and sample[1] == [10, 10.0]
    assert _spread(points[:3]) == [[0, 0.0], [1, 1.0], [2, 2.0]]


# --- when the file cannot separate length from method (issue 36) ---------------------------------


def sized(method: str, length: int, score: int) -> str:
    """A reply of exactly `length` characters that the local judge scores `score`."""
    text = f"{method} [[score={score}]] [[keep=1]] "
    assert len(text) <= length
    return text + "x" * (length - len(text))


def build(plan: dict[str, list[tuple[int, int]]]) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
    """A file of one-round sessions, the i-th holding each method's i-th (length, score); and the lengths, scores and
    method names it holds, as the reference computations read them."""
    rows = len(next(iter(plan.values())))
    lines = []
    for i in range(rows):
        s = session_line(f"s{i}", rounds=1, methods=tuple(plan))
        s["rounds"][0]["responses"] = {m: sized(m, *plan[m][i]) for m in plan}
        lines.append(s)
    pairs = [(m, length, score) for m in plan for length, score in plan[m]]
    return (jsonl(*lines), np.array([p[1] for p in pairs], dtype=float), np.array([p[2] for p in pairs], dtype=float),
            np.array([p[0] for p in pairs]))


def within_share(lengths: np.ndarray, methods: np.ndarray) -> float:
    """Share of the length's sum of squares that lies within methods, summed group by group."""
    within = sum(np.sum((lengths[methods == m] - lengths[methods == m].mean()) ** 2) for m in set(methods))
    return float(within / np.sum((lengths - lengths.mean()) ** 2))


def section(html: str) -> str:
    found = re.search(r'<section class="card" id="length-bias">.*?</section>', html, re.S)
    assert found, "no length-bias section"
    return found.group(0)


def ols(lengths: np.ndarray, scores: np.ndarray, methods: np.ndarray):
    """statsmodels' OLS of the score on method dummies (the first method the baseline) and length."""
    frame = pd.DataFrame({"score": scores, "length": lengths, "method": methods})
    return smf.ols(f"score ~ C(method, Treatment('{methods[0]}')) + length", data=frame).fit()


def term(method: str, reference: str) -> str:
    return f"C(method, Treatment('{reference}'))[T.{method}]"


def test_collinear_file_is_refused_with_its_reason_and_no_coefficient(client):
    # Each method's replies have one of two neighbouring lengths, and the methods lie 50 characters apart: the length
    # says which method wrote a reply. Within a method, the longer reply scores 10 points more, so a fit "at equal
    # length" would extrapolate 10 points per character over 100 characters.
    base = {"A": (100, 60), "B": (200, 55), "C": (150, 50)}
    plan = {m: [(length + i % 2, score + 10 * (i % 2) + (i * 7) % 3 - 1) for i in range(12)]
            for m, (length, score) in base.items()}
    data, lengths, scores, methods = build(plan)
    evaluation_id = evaluate(client, data)
    bias = client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]["length_bias"]
    share = within_share(lengths, methods)
    assert share == pytest.approx(9 / 60009)  # within: 3 methods x 12 x 0.25; between: 12 x (50^2 + 0^2 + 50^2)
    assert bias["identifiable"] is False and bias["reason"] == "collinear"
    assert bias["within_length_share"] == pytest.approx(share) and bias["min_within_length_share"] == 0.1
    empty = {"estimate": None, "se": None, "ci95": None}
    assert bias["differences"] == {"B": empty, "C": empty} and bias["length_slope"] == empty
    assert bias["adjusted_means"] == {} and bias["out_of_range"] == []
    for m in ("B", "C"):  # the differences as judged are still reported
        assert bias["raw_differences"][m] == pytest.approx(scores[methods == m].mean() - scores[methods == "A"].mean())
    for page in (f"/evaluations/{evaluation_id}", f"/evaluations/{evaluation_id}/report.html",
                 share_path(create_share(client, evaluation_id))):
        text = section(client.get(page).get_data(as_text=True))
        assert "Length and method cannot be told apart in this file" in text
        assert f"{100 * share:.2f}%" == "0.01%" and "0.01%" in text and "10%" in text  # the figure judged, the minimum
        assert "At equal length" not in text and "points per 100 characters" not in text
    zh = section(client.get(f"/evaluations/{evaluation_id}", headers={"Accept-Language": "zh"}).get_data(as_text=True))
    assert "此文件无法区分长度与方法" in zh and "0.01%" in zh


def test_well_posed_file_matches_statsmodels(client):
    rng = np.random.default_rng(3)
    effect, spans = {"A": 0.0, "B": -4.0, "C": 6.0}, {"A": (60, 200), "B": (120, 260), "C": (40, 180)}
    plan = {}
    for m, (low, high) in spans.items():
        sizes = rng.integers(low, high, size=20)
        plan[m] = [(int(n), int(np.clip(round(30 + 0.15 * n + effect[m] + rng.normal(0, 5)), 0, 100))) for n in sizes]
    data, lengths, scores, methods = build(plan)
    evaluation_id = evaluate(client, data)
    bias = client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]["length_bias"]
    assert within_share(lengths, methods) > 0.1  # a file that separates length from method
    assert bias["identifiable"] is True and bias["reason"] is None
    assert bias["within_length_share"] == pytest.approx(within_share(lengths, methods))
    fit = ols(lengths, scores, methods)
    bounds = fit.conf_int(0.05)
    for m in ("B", "C"):
        got = bias["differences"][m]
        assert got["estimate"] == pytest.approx(fit.params[term(m, "A")], rel=1e-9)
        assert got["se"] == pytest.approx(fit.bse[term(m, "A")], rel=1e-9)
        assert got["ci95"] == pytest.approx(list(bounds.loc[term(m, "A")]), rel=1e-9)
    slope = bias["length_slope"]
    assert slope["estimate"] == pytest.approx(fit.params["length"], rel=1e-9)
    assert slope["se"] == pytest.approx(fit.bse["length"], rel=1e-9)
    assert slope["ci95"] == pytest.approx(list(bounds.loc["length"]), rel=1e-9)
    # each method's fitted score at the mean length of all replies
    at_mean = fit.predict(pd.DataFrame({"method": ["A", "B", "C"], "length": [lengths.mean()] * 3}))
    assert bias["adjusted_means"] == pytest.approx(dict(zip("ABC", at_mean)), rel=1e-9)
    assert bias["out_of_range"] == []
    text = section(client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True))
    assert "At equal length" in text and "cannot be told apart" not in text
    for m in ("B", "C"):
        low, high = bounds.loc[term(m, "A")]
        assert f"{fit.params[term(m, 'A')]:.1f}" in text and f"[{low:.1f}, {high:.1f}]" in text
    assert f"adds {100 * fit.params['length']:.2f} points per 100 characters" in text


def test_an_estimate_outside_the_score_range_is_not_shown_as_a_finding(client):
    # Lengths vary within each method (a fifth of their variance), but within a method the score climbs 2.5 points a
    # character: at the mean length of all replies the fit puts A near 112 and B near -12, beyond the 0-100 scale.
    plan = {"A": [(100 + 4 * k, min(100, max(0, 10 * k + k % 3 - 1))) for k in range(11)],
            "B": [(150 + 4 * k, min(100, max(0, 10 * k + (k + 1) % 3 - 1))) for k in range(11)]}
    data, lengths, scores, methods = build(plan)
    evaluation_id = evaluate(client, data)
    bias = client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]["length_bias"]
    assert bias["identifiable"] is True and bias["within_length_share"] == pytest.approx(within_share(lengths, methods))
    fit = ols(lengths, scores, methods)
    at_mean = fit.predict(pd.DataFrame({"method": ["A", "B"], "length": [lengths.mean()] * 2}))
    assert at_mean[0] > 100 and at_mean[1] < 0
    assert bias["adjusted_means"] == pytest.approx({"A": at_mean[0], "B": at_mean[1]}, rel=1e-9)
    assert bias["out_of_range"] == ["A", "B"]
    estimate = fit.params[term("B", "A")]
    assert bias["differences"]["B"]["estimate"] == pytest.approx(estimate, rel=1e-9)  # kept in the JSON, flagged
    text = section(client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True))
    assert "outside the score&#39;s 0-100 range" in text or "outside the score's 0-100 range" in text
    assert f"A ({at_mean[0]:.1f})" in text and f"B ({at_mean[1]:.1f})" in text
    assert f"{estimate:.1f}" not in text  # the difference at equal length is not presented


def test_a_result_kept_before_identifiability_was_recorded_still_renders(app, client):
    evaluation_id = evaluate(client, jsonl(*sessions()))
    store = app.extensions["store"]
    record = store.get_evaluation(evaluation_id)
    new_keys = ("identifiable", "reason", "within_length_share", "min_within_length_share", "adjusted_means",
                "out_of_range")
    old_bias = {k: v for k, v in record["result"]["length_bias"].items() if k not in new_keys}
    store.set_result(evaluation_id, {**record["result"], "length_bias": old_bias}, status="done",
                     headline=record["headline"])
    for page in (f"/evaluations/{evaluation_id}", f"/evaluations/{evaluation_id}/report.html"):
        resp = client.get(page)
        assert resp.status_code == 200
        text = section(resp.get_data(as_text=True))
        assert "At equal length" in text and "4.0" in text and "adds 20.00 points per 100 characters" in text


def test_replies_of_one_length_say_the_differences_are_already_at_equal_length(client):
    plan = {"A": [(60, 50), (60, 70), (60, 60)], "B": [(60, 80), (60, 75), (60, 90)]}
    data, _lengths, scores, methods = build(plan)
    evaluation_id = evaluate(client, data)
    bias = client.get(f"/api/evaluations/{evaluation_id}").get_json()["result"]["length_bias"]
    assert bias["identifiable"] is False and bias["reason"] == "constant_length"
    assert bias["within_length_share"] is None and bias["length_slope"]["estimate"] is None
    assert bias["raw_differences"]["B"] == pytest.approx(scores[methods == "B"].mean() - 60.0)  # 81.67 - 60
    text = section(client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True))
    assert "Every reply has the same length" in text and "21.7" in text and "At equal length" not in text


def test_one_method_has_nothing_to_compare(client):
    data, *_ = build({"A": [(60, 50), (80, 70), (70, 60)]})
    bias = client.get(f"/api/evaluations/{evaluate(client, data)}").get_json()["result"]["length_bias"]
    assert bias["identifiable"] is False and bias["reason"] == "fewer_than_two_methods"
    assert bias["differences"] == {} and bias["within_length_share"] is None and bias["n"] == 3
