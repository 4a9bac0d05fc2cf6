"""Unit tests for kinds.dialogue_metrics against hand-computed values."""

import json

import numpy as np
import pytest
import scipy.stats

from kinds import stats
from kinds.dialogue.metrics import DIMENSIONS, curve_statistics, score_methods


def fine(session, k, total, method="A", status="ok", **dims):
    """A fine-mode judgment record."""
    record = {"session": session, "round": k, "method": method, "mode": "fine",
              "status": status, "total": total, "verdict": None}
    record.update({d: dims.get(d) for d in DIMENSIONS})
    return record


def binary(session, k, verdict, method="A", status="ok"):
    """A binary-mode judgment record."""
    record = {"session": session, "round": k, "method": method, "mode": "binary",
              "status": status, "total": None, "verdict": verdict}
    record.update({d: None for d in DIMENSIONS})
    return record


def score(records, methods=("A",), **kwargs):
    results, comparisons = score_methods(records, list(methods), **kwargs)
    return results, comparisons


def curve_values(curve):
    return [p["value"] for p in curve]


# --- AL curve and its statistics ----------------------------------------------------------------


def test_two_sessions_three_rounds_by_hand():
    # s1: 60, 72, 78; s2: 70, 80, 94  ->  AL = (65, 76, 86), n = 2 each.
    # AVG = 227 / 3.  OLS on k = 1, 2, 3: slope = (86 - 65) / 2 = 10.5, intercept = 227/3 - 21.
    # Fitted 65.1667, 75.6667, 86.1667 -> residuals -1/6, 1/3, -1/6 -> SS_res = 1/6.
    # SS_tot = 65² + 76² + 86² - 227²/3 = 662/3 -> R2 = 1 - (1/6)/(662/3) = 1 - 1/1324.
    # N-AL = (AL - 65) / 21 = (0, 11/21, 1); N-IR = 10.5 / 21 = 0.5; N-R2 = R2 (affine invariant).
    records = [fine("s1", 1, 60), fine("s1", 2, 72), fine("s1", 3, 78),
               fine("s2", 1, 70), fine("s2", 2, 80), fine("s2", 3, 94)]
    m = score(records)[0]["A"]
    assert [p["round"] for p in m["al_curve"]] == [1, 2, 3]
    assert curve_values(m["al_curve"]) == pytest.approx([65, 76, 86])
    assert [p["n"] for p in m["al_curve"]] == [2, 2, 2]
    assert m["avg"] == pytest.approx(227 / 3)
    assert m["slope"] == pytest.approx(10.5)
    assert m["intercept"] == pytest.approx(227 / 3 - 21)
    assert m["r2"] == pytest.approx(1 - 1 / 1324)
    assert [p["round"] for p in m["n_al_curve"]] == [1, 2, 3]
    assert curve_values(m["n_al_curve"]) == pytest.approx([0, 11 / 21, 1])
    assert m["n_ir"] == pytest.approx(0.5)
    assert m["n_r2"] == pytest.approx(1 - 1 / 1324)
    assert m["sessions"] == 2
    assert (m["judged"], m["judged_fine"], m["judged_binary"]) == (6, 6, 0)


def test_ragged_sessions_use_per_round_denominators():
    # s1 has rounds 1-2 (50, 60); s2 has rounds 1-4 (70, 80, 90, 100).
    # AL = (60, 70, 90, 100) with n = (2, 2, 1, 1); AVG = 320 / 4 = 80
    # (a pooled mean of all six scores would wrongly give 450 / 6 = 75).
    # OLS: Sxy = 70, Sxx = 5 -> slope 14, intercept 80 - 14 * 2.5 = 45, fitted 59, 73, 87, 101,
    # SS_res = 1 + 9 + 9 + 1 = 20, SS_tot = 1000 -> R2 = 0.98.
    # N-AL = (AL - 60) / 40 = (0, 0.25, 0.75, 1); N-IR = 14 / 40 = 0.35.
    records = [fine("s1", 1, 50), fine("s1", 2, 60),
               fine("s2", 1, 70), fine("s2", 2, 80), fine("s2", 3, 90), fine("s2", 4, 100)]
    m = score(records)[0]["A"]
    assert curve_values(m["al_curve"]) == pytest.approx([60, 70, 90, 100])
    assert [p["n"] for p in m["al_curve"]] == [2, 2, 1, 1]
    assert m["avg"] == pytest.approx(80)
    assert m["slope"] == pytest.approx(14)
    assert m["intercept"] == pytest.approx(45)
    assert m["r2"] == pytest.approx(0.98)
    assert curve_values(m["n_al_curve"]) == pytest.approx([0, 0.25, 0.75, 1])
    assert m["n_ir"] == pytest.approx(0.35)
    assert m["n_r2"] == pytest.approx(0.98)


def test_record_order_does_not_matter():
    records = [fine("s1", 1, 50), fine("s1", 2, 60), fine("s2", 1, 70), fine("s2", 2, 85),
               fine("s3", 1, 40), binary("s1", 1, 1), binary("s2", 1, 0), binary("s3", 2, 1)]
    forward = score(records)[0]
    backward = score(records[::-1])[0]
    assert forward == backward


def test_flat_curve():
    # Every score 70: AL = (70, 70, 70), slope 0, intercept 70, SS_tot = 0 -> R2 None,
    # N-AL all 0 -> its slope is 0 and its R2 is None as well.
    records = [fine(s, k, 70) for s in ("s1", "s2") for k in (1, 2, 3)]
    m = score(records)[0]["A"]
    assert curve_values(m["al_curve"]) == [70, 70, 70]
    assert m["avg"] == pytest.approx(70)
    assert m["slope"] == pytest.approx(0)
    assert m["intercept"] == pytest.approx(70)
    assert m["r2"] is None
    assert curve_values(m["n_al_curve"]) == [0.0, 0.0, 0.0]
    assert m["n_ir"] == 0.0
    assert m["n_r2"] is None


def test_single_round_has_no_fit():
    # One round: AL(1) = (60 + 80) / 2 = 70 = AVG; no line can be fitted through one point.
    m = score([fine("s1", 1, 60), fine("s2", 1, 80)])[0]["A"]
    assert m["al_curve"] == [{"round": 1, "value": 70.0, "n": 2, "ci95": [60.0, 80.0]}]
    assert m["avg"] == 70.0
    assert (m["slope"], m["intercept"], m["r2"]) == (None, None, None)
    assert m["n_al_curve"] == [{"round": 1, "value": 0.0}]
    assert (m["n_ir"], m["n_r2"]) == (None, None)


def test_rounds_with_no_parsed_score_are_left_out():
    # Round 2 only has an unparsed judgment: the curve jumps from round 1 to round 3.
    records = [fine("s1", 1, 40), fine("s1", 2, None, status="unparsed"), fine("s1", 3, 60)]
    m = score(records)[0]["A"]
    assert [p["round"] for p in m["al_curve"]] == [1, 3]
    # Points (1, 40), (3, 60): slope 10, intercept 30; two points fit exactly.
    assert m["slope"] == pytest.approx(10)
    assert m["intercept"] == pytest.approx(30)
    assert m["avg"] == pytest.approx(50)


def test_curve_statistics_helper():
    out = curve_statistics([1, 2, 3, 4], [60, 70, 90, 100])
    assert out["avg"] == pytest.approx(80)
    assert (out["slope"], out["intercept"], out["r2"]) == pytest.approx((14, 45, 0.98))
    assert out["normalised"] == pytest.approx([0, 0.25, 0.75, 1])
    assert (out["n_ir"], out["n_r2"]) == pytest.approx((0.35, 0.98))
    empty = curve_statistics([], [])
    assert empty["avg"] is None and empty["slope"] is None and empty["normalised"] == []


# --- status handling ----------------------------------------------------------------------------


def test_unparsed_failed_and_pending_are_counted_not_averaged():
    records = [
        fine("s1", 1, 60), fine("s2", 1, 80),
        # Carry values that would move the mean if they were (wrongly) used.
        fine("s1", 1, 0, status="unparsed", style=0),
        fine("s2", 1, 0, status="failed"),
        fine("s3", 1, 0, status="pending"),
        binary("s1", 1, 1),
        binary("s2", 1, 0, status="unparsed"),
        binary("s3", 1, 0, status="failed"),
        # "ok" but without a valid value: counted as unparsed, never defaulted or clamped.
        fine("s3", 2, None),
        fine("s3", 3, 101),
        binary("s3", 2, 2),
    ]
    m = score(records)[0]["A"]
    assert m["avg"] == pytest.approx(70)                        # (60 + 80) / 2
    assert m["al_curve"] == [{"round": 1, "value": 70.0, "n": 2, "ci95": [60.0, 80.0]}]
    assert m["binary_rate"] == pytest.approx(100)               # only s1's verdict 1
    assert m["judged"] == 3 and m["judged_fine"] == 2 and m["judged_binary"] == 1
    assert m["unparsed"] == 2 + 3                               # two status=unparsed + three bad ok
    assert m["failed"] == 2
    assert m["pending"] == 1
    assert m["sessions"] == 2                                   # s3 has nothing parsed


def test_duplicate_judgments_of_one_cell_are_averaged_first():
    # s1 round 1 judged twice (60 and 80 -> F = 70); s2 round 1 = 40.
    # AL(1) = (70 + 40) / 2 = 55, not (60 + 80 + 40) / 3.
    records = [fine("s1", 1, 60), fine("s1", 1, 80), fine("s2", 1, 40)]
    m = score(records)[0]["A"]
    assert m["al_curve"] == [{"round": 1, "value": 55.0, "n": 2, "ci95": [40.0, 70.0]}]
    assert m["judged_fine"] == 3


# --- binary ------------------------------------------------------------------------------------


def test_binary_curve_and_rate_by_hand():
    # s1 rounds 1-2: 1, 0; s2 rounds 1-4: 1, 1, 1, 0.
    # BAR = (100, 50, 100, 0), n = (2, 2, 1, 1); binary_avg = 250 / 4 = 62.5.
    # Binary rate = 100 * 4 / 6 (all verdicts pooled), different from the curve mean.
    # OLS: Sxy = -125, Sxx = 5 -> slope -25, intercept 62.5 + 25 * 2.5 = 125;
    # fitted 100, 75, 50, 25;
    # SS_res = 0 + 625 + 2500 + 625 = 3750; SS_tot = 6875 -> R2 = 1 - 3750/6875 = 5/11.
    # N-BAR = BAR / 100 -> N-IR = -0.25, N-R2 = 5/11.
    records = [binary("s1", 1, 1), binary("s1", 2, 0),
               binary("s2", 1, 1), binary("s2", 2, 1), binary("s2", 3, 1), binary("s2", 4, 0)]
    m = score(records)[0]["A"]
    assert curve_values(m["binary_curve"]) == pytest.approx([100, 50, 100, 0])
    assert [p["n"] for p in m["binary_curve"]] == [2, 2, 1, 1]
    assert [p["round"] for p in m["binary_curve"]] == [1, 2, 3, 4]
    assert m["binary_avg"] == pytest.approx(62.5)
    assert m["binary_rate"] == pytest.approx(400 / 6)
    assert m["binary_slope"] == pytest.approx(-25)
    assert m["binary_intercept"] == pytest.approx(125)
    assert m["binary_r2"] == pytest.approx(5 / 11)
    assert m["binary_n_ir"] == pytest.approx(-0.25)
    assert m["binary_n_r2"] == pytest.approx(5 / 11)
    # No fine data: the fine side is empty, the binary side is not.
    assert m["al_curve"] == [] and m["avg"] is None and m["ci95"]["avg"] is None
    assert (m["judged"], m["judged_fine"], m["judged_binary"]) == (6, 0, 6)


# --- dimensions --------------------------------------------------------------------------------


def test_dimension_means_over_parsed_fine_judgments():
    # style (10, 12, 20) -> 14; content (5, 5, 8) -> 6; naturalness (20, 19, 18) -> 19;
    # personalization (0, 3, 6) -> 3; conversation (15, 16, 20) -> 17.
    records = [
        fine("s1", 1, 50, style=10, content=5, naturalness=20, personalization=0, conversation=15),
        fine("s1", 2, 55, style=12, content=5, naturalness=19, personalization=3, conversation=16),
        fine("s2", 1, 72, style=20, content=8, naturalness=18, personalization=6, conversation=20),
        fine("s2", 2, None, status="unparsed", style=0, content=0, naturalness=0,
             personalization=0, conversation=0),
        binary("s1", 1, 1),
    ]
    dims = score(records)[0]["A"]["dimensions"]
    assert dims == pytest.approx({"style": 14, "content": 6, "naturalness": 19,
                                  "personalization": 3, "conversation": 17})
    assert set(dims) == set(DIMENSIONS)


# --- empty methods -----------------------------------------------------------------------------


def test_method_without_parsed_data():
    records = [fine("s1", 1, None, method="B", status="unparsed"),
               binary("s1", 1, None, method="B", status="unparsed"),
               fine("s2", 1, None, method="B", status="failed"),
               fine("s1", 1, 80, method="A")]
    results, comparisons = score(records, methods=("A", "B", "C"))
    for name, unparsed, failed in (("B", 2, 1), ("C", 0, 0)):
        m = results[name]
        assert m["al_curve"] == [] and m["n_al_curve"] == [] and m["binary_curve"] == []
        for key in ("avg", "slope", "intercept", "r2", "n_ir", "n_r2", "binary_rate",
                    "binary_avg", "binary_slope", "binary_intercept", "binary_r2",
                    "binary_n_ir", "binary_n_r2"):
            assert m[key] is None, key
        assert m["dimensions"] == {d: None for d in DIMENSIONS}
        assert m["ci95"] == {"avg": None, "binary_rate": None}
        assert (m["sessions"], m["judged"], m["unparsed"], m["failed"]) == (0, 0, unparsed, failed)
    assert [(c["a"], c["b"], c["metric"]) for c in comparisons] == [
        ("A", "B", "fine"), ("A", "B", "binary"), ("A", "C", "fine"), ("A", "C", "binary"),
        ("B", "C", "fine"), ("B", "C", "binary")]
    assert all(c["diff"] is None and c["ci95"] is None and c["sessions"] == 0
               and c["significant"] is False for c in comparisons)
    json.dumps([results, comparisons], allow_nan=False)


def test_no_records_at_all():
    results, comparisons = score([], methods=("A",))
    assert results["A"]["avg"] is None and results["A"]["judged"] == 0
    assert comparisons == []


def test_methods_not_requested_are_ignored_and_order_kept():
    records = [fine("s1", 1, 10, method="X"), fine("s1", 1, 90, method="B"),
               fine("s1", 1, 30, method="A")]
    results, _ = score(records, methods=("B", "A"))
    assert list(results) == ["B", "A"]
    assert results["B"]["avg"] == 90 and results["A"]["avg"] == 30


def test_missing_required_field_is_an_error():
    with pytest.raises(ValueError):
        score([{"session": "s1", "round": 1, "method": "A", "mode": "fine", "total": 5}])


def test_the_stores_columns_give_the_same_result_as_records():
    from kinds.dialogue.panel import by_judge
    from kinds.dialogue.records import judgment_table

    records = [fine("s1", 1, 60), fine("s1", 2, 72), fine("s2", 1, 70), binary("s1", 1, 1),
               binary("s2", 1, 0), fine("s2", 2, None, status="unparsed"), fine("s10", 1, 65, method="B")]
    stored = [{**{k: v for k, v in r.items() if k != "session"}, "session_id": r["session"],
               "session_idx": int(r["session"][1:])} for r in reversed(records)]
    assert score(by_judge(judgment_table(stored), 1)[0], ("A", "B")) == score(records, ("A", "B"))


def test_output_is_plain_json_types():
    rng = np.random.default_rng(0)
    records = [fine(f"s{s}", k, float(rng.integers(0, 101)), method=m,
                    style=np.int64(10), content=5, naturalness=5, personalization=5,
                    conversation=5)
               for s in range(6) for k in (1, 2) for m in ("A", "B")]
    records += [binary(f"s{s}", 1, int(rng.integers(0, 2)), method=m)
                for s in range(6) for m in ("A", "B")]
    results, comparisons = score(records, methods=("A", "B"), n_boot=200)
    text = json.dumps([results, comparisons], allow_nan=False)
    assert json.loads(text) == [results, comparisons]

    def walk(value):
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        else:
            assert value is None or type(value) in (int, float, str, bool), type(value)

    walk([results, comparisons])


# --- confidence intervals ----------------------------------------------------------------------


def _random_sessions(n_sessions, seed, method="A", shift=0.0):
    rng = np.random.default_rng(seed)
    records = []
    for s in range(n_sessions):
        for k in range(1, int(rng.integers(1, 6)) + 1):
            records.append(fine(f"s{s:04d}", k, float(np.clip(rng.normal(60 + shift + 2 * k, 12),
                                                               0, 100)), method=method))
            records.append(binary(f"s{s:04d}", k, int(rng.random() < 0.6), method=method))
    return records


def test_ci_contains_estimate_and_is_reproducible():
    records = _random_sessions(60, seed=3)
    m = score(records, seed=7)[0]["A"]
    lo, hi = m["ci95"]["avg"]
    assert lo <= m["avg"] <= hi and lo < hi
    lo, hi = m["ci95"]["binary_rate"]
    assert lo <= m["binary_rate"] <= hi and lo < hi
    assert score(records, seed=7)[0]["A"]["ci95"] == m["ci95"]
    assert score(records, seed=8)[0]["A"]["ci95"] != m["ci95"]


def test_avg_ci_matches_slow_loop_over_same_resampled_sessions():
    records = _random_sessions(25, seed=4)
    m = score(records, n_boot=400, seed=2)[0]["A"]
    # Sessions are resampled in sorted id order; rebuild F(s, k) with plain dicts.
    scores = {}
    for r in records:
        if r["mode"] == "fine":
            scores.setdefault(r["session"], {})[r["round"]] = r["total"]
    sessions = sorted(scores)
    slow_avgs = []
    for row in stats.resample_indices(len(sessions), n_boot=400, seed=2):
        by_round = {}
        for i in row:
            for k, value in scores[sessions[i]].items():
                by_round.setdefault(k, []).append(value)
        al = [sum(v) / len(v) for v in by_round.values()]
        slow_avgs.append(sum(al) / len(al))
    assert m["ci95"]["avg"] == pytest.approx(list(np.percentile(slow_avgs, [2.5, 97.5])))


def test_binary_rate_ci_matches_slow_loop():
    records = _random_sessions(25, seed=5)
    m = score(records, n_boot=400, seed=6)[0]["A"]
    verdicts = {}
    for r in records:
        if r["mode"] == "binary":
            verdicts.setdefault(r["session"], []).append(r["verdict"])
    sessions = sorted(verdicts)
    slow = []
    for row in stats.resample_indices(len(sessions), n_boot=400, seed=6):
        drawn = [v for i in row for v in verdicts[sessions[i]]]
        slow.append(100 * sum(drawn) / len(drawn))
    assert m["ci95"]["binary_rate"] == pytest.approx(list(np.percentile(slow, [2.5, 97.5])))


def test_ci_narrows_with_more_sessions():
    small = score(_random_sessions(20, seed=9))[0]["A"]["ci95"]
    large = score(_random_sessions(500, seed=9))[0]["A"]["ci95"]
    for key in ("avg", "binary_rate"):
        assert large[key][1] - large[key][0] < (small[key][1] - small[key][0]) / 2, key


def test_constant_value_ci_is_a_point():
    # Ragged sessions all scoring 73.3 and always wanting to continue.
    records = [fine(f"s{s}", k, 73.3) for s in range(8) for k in range(1, s % 3 + 2)]
    records += [binary(f"s{s}", k, 1) for s in range(8) for k in range(1, s % 3 + 2)]
    ci = score(records)[0]["A"]["ci95"]
    assert ci["avg"] == [73.3, 73.3]
    assert ci["binary_rate"] == [100.0, 100.0]


def test_ci_needs_two_sessions():
    records = [fine("s1", 1, 50), fine("s1", 2, 70), binary("s1", 1, 1), binary("s1", 2, 0)]
    m = score(records)[0]["A"]
    assert m["avg"] == 60 and m["binary_rate"] == 50
    assert m["ci95"] == {"avg": None, "binary_rate": None}


# --- comparisons -------------------------------------------------------------------------------


def _pair(session, k, a_total, b_total, a_verdict, b_verdict):
    return [fine(session, k, a_total, "A"), fine(session, k, b_total, "B"),
            binary(session, k, a_verdict, "A"), binary(session, k, b_verdict, "B")]


def test_comparison_a_beats_b_by_ten():
    records = []
    for s, base in enumerate([40, 52, 61, 75, 80, 33]):
        for k in (1, 2, 3):
            records += _pair(f"s{s}", k, base + k + 10, base + k, 1, 1)
    comparisons = score(records, methods=("A", "B"))[1]
    fine_cmp = next(c for c in comparisons if c["metric"] == "fine")
    assert fine_cmp == {"a": "A", "b": "B", "metric": "fine", "diff": 10.0,
                        "ci95": [10.0, 10.0], "significant": True, "sessions": 6,
                        "p_value": 0.0, "p_holm": 0.0, "significant_holm": True}  # no variation: t -> infinity
    binary_cmp = next(c for c in comparisons if c["metric"] == "binary")
    assert binary_cmp["diff"] == 0.0 and binary_cmp["significant"] is False


def test_comparison_of_identical_methods():
    records = []
    rng = np.random.default_rng(1)
    for s in range(10):
        for k in (1, 2):
            total, verdict = float(rng.integers(0, 101)), int(rng.integers(0, 2))
            records += _pair(f"s{s}", k, total, total, verdict, verdict)
    for c in score(records, methods=("A", "B"))[1]:
        assert c["diff"] == 0.0
        assert c["ci95"] == [0.0, 0.0]
        assert c["significant"] is False
        assert c["sessions"] == 10


def test_comparison_uses_per_session_means_on_shared_sessions():
    # A: s1 rounds (60, 80) -> 70; s2 (50) -> 50; s3 (90) -> 90 (B lacks s3).
    # B: s1 (65) -> 65; s2 (40, 50) -> 45; s4 (10) (A lacks s4).
    # Shared sessions s1, s2: differences 5 and 5 -> diff 5, CI [5, 5].
    # Binary (x100): A s1 (1, 0) -> 50, s2 (1) -> 100; B s1 (0) -> 0, s2 (1, 1) -> 100:
    # differences 50 and 0 -> diff 25; resample means lie in [0, 50].
    records = [fine("s1", 1, 60, "A"), fine("s1", 2, 80, "A"), fine("s2", 1, 50, "A"),
               fine("s3", 1, 90, "A"),
               fine("s1", 1, 65, "B"), fine("s2", 1, 40, "B"), fine("s2", 2, 50, "B"),
               fine("s4", 1, 10, "B"),
               binary("s1", 1, 1, "A"), binary("s1", 2, 0, "A"), binary("s2", 1, 1, "A"),
               binary("s1", 1, 0, "B"), binary("s2", 1, 1, "B"), binary("s2", 2, 1, "B")]
    fine_cmp, binary_cmp = score(records, methods=("A", "B"))[1]
    assert fine_cmp["sessions"] == 2 and fine_cmp["diff"] == pytest.approx(5)
    assert fine_cmp["ci95"] == pytest.approx([5, 5]) and fine_cmp["significant"] is True
    assert binary_cmp["sessions"] == 2 and binary_cmp["diff"] == pytest.approx(25)
    assert 0 <= binary_cmp["ci95"][0] <= binary_cmp["ci95"][1] <= 50
    assert binary_cmp["significant"] is False   # resamples of only s2 give a difference of 0


def test_comparison_with_one_shared_session_has_no_ci():
    records = _pair("s1", 1, 80, 60, 1, 0)
    fine_cmp, binary_cmp = score(records, methods=("A", "B"))[1]
    assert fine_cmp["diff"] == 20.0 and fine_cmp["ci95"] is None
    assert fine_cmp["significant"] is False and fine_cmp["sessions"] == 1
    assert binary_cmp["diff"] == 100.0 and binary_cmp["ci95"] is None


def test_comparison_order_follows_methods():
    records = [r for seed, name in ((1, "A"), (2, "B"), (3, "C"))
               for r in _random_sessions(5, seed, name)]
    comparisons = score(records, methods=("C", "A", "B"), n_boot=100)[1]
    assert [(c["a"], c["b"]) for c in comparisons[::2]] == [("C", "A"), ("C", "B"), ("A", "B")]
    assert [c["metric"] for c in comparisons] == ["fine", "binary"] * 3


def test_clear_improvement_is_significant_on_noisy_data():
    # Independent noise (different seeds, so different round counts too), A 8 points higher.
    records = _random_sessions(200, seed=11, method="A", shift=8.0)
    records += _random_sessions(200, seed=12, method="B", shift=0.0)
    fine_cmp = score(records, methods=("A", "B"))[1][0]
    assert fine_cmp["diff"] > 0 and fine_cmp["ci95"][0] > 0 and fine_cmp["significant"] is True


def test_each_curve_point_has_a_bootstrap_interval_checked_against_a_loop():
    from kinds import stats as st
    # 4 sessions; round 1 for all, round 2 for the first three only (ragged)
    fine = {("s1", 1): 50, ("s2", 1): 60, ("s3", 1): 70, ("s4", 1): 80, ("s1", 2): 40, ("s2", 2): 40, ("s3", 2): 70}
    records = [{"session": s, "round": k, "method": "A", "mode": "fine", "status": "ok", "total": v}
               for (s, k), v in fine.items()]
    records += [{"session": s, "round": k, "method": "A", "mode": "binary", "status": "ok", "verdict": 1}
                for (s, k) in fine]
    methods, _ = score_methods(records, ["A"], n_boot=500, seed=3)
    points = methods["A"]["al_curve"]
    # the slow obvious computation with the same resampled sessions (sorted ids s1..s4)
    idx = st.resample_indices(4, 500, 3)
    sessions = ["s1", "s2", "s3", "s4"]
    for point in points:
        k = point["round"]
        means = []
        for row in idx:
            values = [fine[(sessions[i], k)] for i in row if (sessions[i], k) in fine]
            if values:
                means.append(sum(values) / len(values))
        lo, hi = np.percentile(means, [2.5, 97.5])
        assert point["ci95"] == pytest.approx([lo, hi])
        assert point["ci95"][0] <= point["value"] <= point["ci95"][1]
    assert all(p["ci95"] == [100.0, 100.0] for p in methods["A"]["binary_curve"])  # always kept chatting


def test_pairwise_differences_carry_a_paired_t_test_and_holms_correction():
    # Per-session means (one round each): B is A + 1 +- a little, C is A + 0.05 +- a lot.
    a = [50, 60, 55, 70, 65, 58]
    b = [x + d for x, d in zip(a, [1.0, 1.2, 0.8, 1.1, 0.9, 1.0])]
    c = [x + d for x, d in zip(a, [3.0, -2.0, 1.5, -1.0, -2.5, 1.3])]
    records = [fine(s, 1, v, method=m) for m, values in (("A", a), ("B", b), ("C", c)) for s, v in enumerate(values)]
    _results, comparisons = score(records, methods=("A", "B", "C"))
    family = [x for x in comparisons if x["metric"] == "fine"]
    assert [(x["a"], x["b"]) for x in family] == [("A", "B"), ("A", "C"), ("B", "C")]
    pairs = {("A", "B"): (a, b), ("A", "C"): (a, c), ("B", "C"): (b, c)}
    raw = [scipy.stats.ttest_rel(*pairs[(x["a"], x["b"])]).pvalue for x in family]
    assert [x["p_value"] for x in family] == pytest.approx(raw)
    # Holm by hand: sort ascending, multiply the i-th smallest by (m - i), keep the running maximum, cap at 1.
    order = sorted(range(3), key=lambda i: raw[i])
    adjusted, running = [0.0] * 3, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (3 - rank) * raw[i]))
        adjusted[i] = running
    assert [x["p_holm"] for x in family] == pytest.approx(adjusted)
    assert [x["significant_holm"] for x in family] == [p <= 0.05 for p in adjusted]
    assert family[0]["significant_holm"] and not family[1]["significant_holm"]  # A-B is clear, A-C is noise
    # binary has no data here: no p-values, nothing significant
    assert all(x["p_value"] is None and x["significant_holm"] is False for x in comparisons if x["metric"] == "binary")
