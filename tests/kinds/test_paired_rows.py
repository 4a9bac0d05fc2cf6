"""Which samples of two runs pair up, their paired rows and the regression rule."""
import pytest
from scipy.stats import wilcoxon
from statsmodels.stats.multitest import multipletests

from kinds.kind import Metric, Sample
from kinds.paired_rows import align, is_regression, paired_rows


def sample(method: str, key: tuple, value: float) -> Sample:
    return Sample(method=method, key=key, cluster=str(key[0]), values={"avg": value})


def test_align_pairs_the_same_method_and_key_in_the_baselines_order():
    baseline = [sample("A", ("s1", 1), 1), sample("A", ("s1", 2), 2), sample("B", ("s1", 1), 3),
                sample("A", ("s2", 1), 4), sample("A", ("s1", 1), 99)]  # a repeated key counts once
    other = [sample("B", ("s1", 1), 30), sample("A", ("s2", 1), 40), sample("A", ("s1", 1), 10),
             sample("C", ("s1", 1), 50), sample("A", ("s1", 1), 11)]
    pairs = align(baseline, other)
    assert [(a.method, a.key, a.values["avg"], b.values["avg"]) for a, b in pairs] == [
        ("A", ("s1", 1), 1, 10), ("B", ("s1", 1), 3, 30), ("A", ("s2", 1), 4, 40)]


def test_align_of_runs_without_shared_samples_is_empty():
    assert align([sample("A", ("s1", 1), 1)], [sample("A", ("s2", 1), 1)]) == []
    assert align([], []) == []


class _Kind:
    """The little of a kind paired_rows reads."""

    paired_metrics = (Metric("avg", "AVG"), Metric("keep", "Keep", binary=True))

    def paired_aggregates(self, pairs):
        return [{"method": "all", "metric": "sum", "baseline_value": 1.0, "value": 2.0, "diff": 1.0, "ci95": [1.0, 1.0],
                 "p_value": 0.5, "n_pairs": len(pairs), "test": "t", "mdd": None}]


def two(method, key, avg, keep):
    return Sample(method=method, key=key, cluster=key[0], values={"avg": avg, "keep": keep})


def test_paired_rows_per_method_and_metric_leave_out_missing_values_and_adjust_over_all_rows():
    baseline = [two("A", ("s1", 1), 50, 1), two("A", ("s1", 2), 60, 1), two("A", ("s2", 1), 70, 0),
                two("B", ("s1", 1), 10, None)]
    other = [two("A", ("s1", 1), 40, 0), two("A", ("s1", 2), None, 1), two("A", ("s2", 1), 70, 1),
             two("B", ("s1", 1), 20, 0.5)]
    rows = paired_rows(_Kind(), baseline, {"r2": other})
    got = {(r["method"], r["metric"]): r for r in rows}
    assert list(got) == [("A", "avg"), ("A", "keep"), ("B", "avg"), ("all", "sum")]  # B keep: no complete pair
    assert got[("A", "avg")]["n_pairs"] == 2 and got[("A", "avg")]["diff"] == -5.0  # (40-50 + 70-70) / 2
    assert got[("A", "keep")]["test"] == "mcnemar" and got[("A", "keep")]["n_pairs"] == 3
    assert got[("A", "keep")]["p_value"] == 1.0  # one gained, one lost
    assert got[("all", "sum")]["n_pairs"] == 4 and all(r["run"] == "r2" for r in rows)
    p = [r["p_value"] for r in rows if r["p_value"] is not None]
    assert [r["p_holm"] for r in rows if r["p_value"] is not None] == pytest.approx(
        list(multipletests(p, method="holm")[1]))


def test_fractional_verdicts_take_the_score_test():
    baseline = [two("A", (f"s{i}", 1), 1, 1) for i in range(6)]
    other = [two("A", (f"s{i}", 1), 1, 0.5) for i in range(6)]
    row = next(r for r in paired_rows(_Kind(), baseline, {"r": other}) if r["metric"] == "keep")
    assert row["test"] == "wilcoxon" and row["diff"] == -0.5
    assert row["p_value"] == pytest.approx(wilcoxon([-0.5] * 6).pvalue)


@pytest.mark.parametrize("ci, p, p_holm, max_drop, expected", [
    ([-3.0, -1.0], 0.01, 0.04, None, True),
    ([-3.0, -1.0], 0.01, 0.06, None, False),  # not significant once corrected
    ([-3.0, 0.5], 0.001, 0.001, None, False),  # the interval reaches 0
    ([-3.0, -1.0], 0.01, 0.01, 2.0, False),  # not clearly a drop of more than 2
    ([-5.0, -2.5], 0.01, 0.01, 2.0, True),
    ([-4.0, -4.0], None, None, None, True),  # the same drop on every pair: no p-value, CI [d, d]
    ([-4.0, -4.0], None, None, 4.0, False),
    (None, None, None, None, False),  # one session: no interval
])
def test_is_regression(ci, p, p_holm, max_drop, expected):
    row = {"ci95": ci, "p_value": p, "p_holm": p_holm, "p_bh": None}
    assert is_regression(row, max_drop) is expected


def test_is_regression_reads_the_chosen_correction():
    row = {"ci95": [-3.0, -1.0], "p_value": 0.01, "p_holm": 0.2, "p_bh": 0.03}
    assert is_regression(row, correction="bh") and not is_regression(row)
    with pytest.raises(ValueError):
        is_regression(row, correction="bonferroni")
