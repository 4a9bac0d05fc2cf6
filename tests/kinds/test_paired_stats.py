"""Unit tests for kinds.paired_stats: hand-built cases whose every figure is known in advance, and cross-checks
against scipy, statsmodels and a plain-loop cluster bootstrap."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats as sp_stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from kinds import paired_stats as paired
from kinds.stats import resample_indices

# --- hand-built scores ---------------------------------------------------------------------------

# Four sessions: s1 (3 rounds) and s2 (1 round) gain exactly +2 on every round, s3 and s4 (2 rounds each) gain 0.
SHIFT_BASELINE = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0]
SHIFT_OTHER = [12.0, 22.0, 32.0, 42.0, 50.0, 60.0, 70.0, 80.0]
SHIFT_SESSIONS = ["s1", "s1", "s1", "s2", "s3", "s3", "s4", "s4"]


def test_constant_shift_on_some_sessions_every_figure_by_hand():
    r = paired.paired_scores(SHIFT_BASELINE, SHIFT_OTHER, SHIFT_SESSIONS, n_boot=2000, test="t")
    assert r.baseline_value == 45.0  # 360 / 8
    assert r.value == 46.0  # 368 / 8
    assert r.diff == 1.0  # 4 pairs of +2 and 4 of 0 over 8 pairs
    assert (r.n_pairs, r.n_clusters, r.test) == (8, 4, "t")
    # A resample draws only the +2 sessions (or only the 0 ones) with chance (1/2)^4 = 6.25% > 2.5%, so the 2.5th and
    # 97.5th percentiles are the extreme pooled means exactly.
    assert r.ci95 == [0.0, 2.0]
    # The t-test runs on the session means [2, 2, 0, 0]: mean 1, sd sqrt(4/3), t = 1 / (sqrt(4/3) / 2) = sqrt(3),
    # df 3. Student's t with 3 df has F(t) = 1/2 + (t / (sqrt(3) (1 + t^2/3)) + atan(t / sqrt(3))) / pi, so
    # F(sqrt(3)) = 1/2 + (1/2 + pi/4) / pi = 3/4 + 1/(2 pi), and p = 2 (1 - F) = 1/2 - 1/pi.
    assert r.p_value == pytest.approx(0.5 - 1.0 / math.pi, rel=1e-12)
    sd = math.sqrt(4.0 / 3.0)
    assert r.mdd == pytest.approx(TTestPower().solve_power(effect_size=None, nobs=4, alpha=0.05, power=0.8) * sd,
                                  rel=1e-6)


def test_constant_shift_wilcoxon_drops_the_zero_sessions():
    r = paired.paired_scores(SHIFT_BASELINE, SHIFT_OTHER, SHIFT_SESSIONS, test="wilcoxon")
    # zero_method "wilcox": the two 0 sessions are dropped; two positive differences of equal rank leave the exact
    # null distribution of W+ on {0, 1.5, 1.5, 3}; the observed W- = 0 has P = 1/4, two-sided 1/2.
    assert r.p_value == 0.5
    assert r.test == "wilcoxon"


def test_wilcoxon_exact_with_every_session_better():
    # Six sessions, distinct positive differences: W- = 0 has probability 1 / 2^6; two-sided 2 / 64.
    r = paired.paired_scores([0.0] * 6, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], list("abcdef"))
    assert r.p_value == 2.0 / 64.0
    assert r.diff == 3.5


def test_wilcoxon_with_ties_and_a_zero_by_hand():
    # Differences 1, 1, -2, 3, 0: the zero is dropped, |d| ranks 1.5, 1.5, 3, 4 and W+ = 1.5 + 1.5 + 4 = 7. Of the 16
    # sign patterns, W+ >= 7 in 5 (7 twice, 8.5 twice, 10) and <= 7 in 13: two-sided 2 * 5 / 16.
    assert paired.signed_rank_p(np.array([1.0, 1.0, -2.0, 3.0, 0.0])) == 0.625
    r = paired.paired_scores([0.0] * 5, [1.0, 1.0, -2.0, 3.0, 0.0], list("abcde"))
    assert r.p_value == 0.625


@settings(max_examples=100, deadline=None)  # scipy's side takes up to 0.7 s a case
@given(st.lists(st.integers(-4, 4), min_size=1, max_size=16), st.sampled_from([1.0, 0.5, 0.25, 1 / 3, 0.1]))
def test_signed_rank_p_is_scipys_bit_for_bit(steps, unit):
    # small integer steps: ties and zeros everywhere, on both sides of scipy's 13-difference permutation limit
    diffs = np.array(steps, dtype=float) * unit
    assume(np.any(diffs != 0))
    assert paired.signed_rank_p(diffs) == float(sp_stats.wilcoxon(diffs, zero_method="wilcox").pvalue)


def test_two_sessions_interval_is_their_two_means():
    # Session A's differences 0 and 2 (mean 1), session B's 3 (mean 3). Resamples: AA (1/4) -> 1, BB (1/4) -> 3,
    # mixed (1/2) -> (0 + 2 + 3) / 3. Both extremes fall beyond 2.5% of the draws.
    r = paired.paired_scores([5.0, 5.0, 5.0], [5.0, 7.0, 8.0], ["A", "A", "B"], n_boot=1000, seed=3)
    assert r.ci95 == [1.0, 3.0]
    assert r.diff == pytest.approx(5.0 / 3.0)


def test_interval_matches_a_plain_loop_over_the_same_draws():
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 6, size=40)  # ragged sessions
    sessions = np.repeat([f"s{i}" for i in range(40)], sizes)
    baseline = rng.normal(50, 10, size=sessions.size)
    other = baseline + rng.normal(1, 5, size=sessions.size)
    r = paired.paired_scores(baseline, other, sessions, n_boot=500, seed=11, level=0.9)
    differences = other - baseline
    by_session = [differences[sessions == f"s{i}"] for i in range(40)]  # order of first appearance
    means = [np.concatenate([by_session[c] for c in draw]).mean() for draw in resample_indices(40, 500, 11)]
    assert r.ci95 == pytest.approx(list(np.percentile(means, [5.0, 95.0])), rel=1e-12)


# --- cross-checks against scipy ------------------------------------------------------------------


def test_one_pair_per_session_is_scipys_paired_tests():
    rng = np.random.default_rng(1)
    baseline = rng.normal(size=30)
    other = baseline + rng.normal(0.3, 1.0, size=30)
    sessions = list(range(30))
    assert paired.paired_scores(baseline, other, sessions, test="t").p_value == pytest.approx(
        sp_stats.ttest_rel(other, baseline).pvalue, rel=1e-12)
    assert paired.paired_scores(baseline, other, sessions).p_value == pytest.approx(
        sp_stats.wilcoxon(other, baseline).pvalue, rel=1e-12)


def test_several_pairs_per_session_test_the_session_means():
    rng = np.random.default_rng(2)
    sessions = np.repeat(np.arange(12), 5)
    baseline = rng.normal(size=60)
    other = baseline + rng.normal(0.2, 1.0, size=60)
    session_means = [float(np.mean((other - baseline)[sessions == s])) for s in range(12)]
    t = paired.paired_scores(baseline, other, sessions, test="t")
    assert t.p_value == pytest.approx(sp_stats.ttest_1samp(session_means, 0.0).pvalue, rel=1e-9)
    w = paired.paired_scores(baseline, other, sessions)
    assert w.p_value == pytest.approx(sp_stats.wilcoxon(session_means).pvalue, rel=1e-9)
    assert (t.n_pairs, t.n_clusters) == (60, 12)


def test_mdd_is_statsmodels_exact_noncentral_t_answer():
    for n in (2, 3, 5, 10, 30, 200, 2000):
        expected = TTestPower().solve_power(effect_size=None, nobs=n, alpha=0.05, power=0.8)
        # statsmodels' root finder stops early (its answer is 2e-5 off at n = 2000); the check of the power at this
        # module's answer with statsmodels' own power function below is the tight one.
        assert paired.min_detectable_effect(n) == pytest.approx(expected, rel=1e-4)
        if n > 2:  # with df 1 statsmodels' power is NaN (scipy's noncentral t lower tail), though its solver is not
            assert TTestPower().power(paired.min_detectable_effect(n), n, 0.05) == pytest.approx(0.8, abs=1e-9)
    # The usual approximation (t_{0.975, df} + t_{0.8, df}) / sqrt(n) is close once n is moderate.
    n = 100
    approx = (sp_stats.t.ppf(0.975, n - 1) + sp_stats.t.ppf(0.8, n - 1)) / math.sqrt(n)
    assert paired.min_detectable_effect(n) == pytest.approx(approx, rel=0.01)
    assert paired.min_detectable_effect(1) is None


def test_mdd_scales_with_the_spread_of_session_differences():
    rng = np.random.default_rng(3)
    baseline = rng.normal(size=25)
    other = baseline + rng.normal(size=25)
    r = paired.paired_scores(baseline, other, range(25))
    sd = float(np.std(other - baseline, ddof=1))
    assert r.mdd == pytest.approx(paired.min_detectable_effect(25) * sd, rel=1e-12)


# --- edge cases ----------------------------------------------------------------------------------


@pytest.mark.parametrize("test", ["wilcoxon", "t"])
def test_no_pairs_gives_none_everywhere(test):
    r = paired.paired_scores([], [], [], test=test)
    assert r == paired.PairedScores(None, None, None, None, None, test, 0, 0, None)
    # Pairs with a missing side do not count.
    assert paired.paired_scores([None, 1.0], [2.0, float("nan")], ["a", "b"], test=test).n_pairs == 0


def test_one_pair():
    r = paired.paired_scores([3.0], [5.0], ["a"], test="t")
    assert (r.baseline_value, r.value, r.diff, r.n_pairs, r.n_clusters) == (3.0, 5.0, 2.0, 1, 1)
    assert (r.ci95, r.p_value, r.mdd) == (None, None, None)
    # The signed-rank test of one nonzero difference is defined: W- = 0 with probability 1/2, two-sided 1.
    assert paired.paired_scores([3.0], [5.0], ["a"]).p_value == 1.0


@pytest.mark.parametrize("test", ["wilcoxon", "t"])
def test_all_differences_zero(test):
    r = paired.paired_scores([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], ["a", "a", "b"], test=test)
    assert (r.diff, r.ci95) == (0.0, [0.0, 0.0])
    assert r.p_value is None  # nothing to rank, and a t statistic of 0 / 0
    assert r.mdd is None  # no spread to scale it by


def test_constant_nonzero_differences():
    r = paired.paired_scores([1.0, 2.0, 3.0], [3.0, 4.0, 5.0], ["a", "b", "c"], test="t")
    assert (r.diff, r.ci95, r.p_value, r.mdd) == (2.0, [2.0, 2.0], None, None)  # t = 2 / 0 is not a number
    # Three tied positive ranks: W- = 0 with probability 1/8, two-sided 1/4.
    assert paired.paired_scores([1.0, 2.0, 3.0], [3.0, 4.0, 5.0], ["a", "b", "c"]).p_value == 0.25


def test_missing_values_drop_the_pair_and_sessions_without_pairs():
    r = paired.paired_scores([1.0, None, 2.0, 4.0], [2.0, 5.0, float("nan"), 6.0], ["a", "b", "c", "c"])
    assert (r.n_pairs, r.n_clusters, r.diff) == (2, 2, 1.5)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="same length"):
        paired.paired_scores([1.0, 2.0], [1.0], ["a", "b"])
    with pytest.raises(ValueError, match="same length"):
        paired.paired_scores([1.0, 2.0], [1.0, 2.0], ["a"])
    with pytest.raises(ValueError, match="test must be"):
        paired.paired_scores([1.0], [2.0], ["a"], test="sign")
    with pytest.raises(ValueError, match="0 or 1"):
        paired.paired_verdicts([1, 2], [0, 1], ["a", "b"])


# --- verdicts ------------------------------------------------------------------------------------


def test_flipped_verdicts_by_hand():
    # 10 pairs: 7 lost (1 -> 0), 1 gained (0 -> 1), one (1, 1) and one (0, 0).
    baseline = [1] * 7 + [0] + [1, 0]
    other = [0] * 7 + [1] + [1, 0]
    r = paired.paired_verdicts(baseline, other, range(10), n_boot=500)
    assert (r.gained, r.lost, r.n_pairs, r.n_clusters, r.test) == (1, 7, 10, 10, "mcnemar")
    assert (r.baseline_value, r.value) == (0.8, 0.2)
    assert r.diff == pytest.approx(-0.6)
    # Exact McNemar: 8 discordant pairs, the rarer side 1: 2 P(Bin(8, 1/2) <= 1) = 2 (1 + 8) / 256.
    assert r.p_value == pytest.approx(18.0 / 256.0, rel=1e-12)
    assert r.p_value == sp_stats.binomtest(1, 8, 0.5).pvalue
    table = [[1, 7], [1, 1]]  # rows: baseline 1 / 0; columns: other 1 / 0
    assert r.p_value == mcnemar(table, exact=True).pvalue
    assert -1.0 <= r.ci95[0] <= r.diff <= r.ci95[1] <= 1.0
    # MDD: the t-based figure on the per-pair differences (-1 x 7, +1, 0, 0).
    sd = float(np.std([-1] * 7 + [1, 0, 0], ddof=1))
    assert r.mdd == pytest.approx(paired.min_detectable_effect(10) * sd, rel=1e-12)


def test_mcnemar_matches_statsmodels():
    for gained in range(0, 12):
        for lost in range(0, 12):
            expected = mcnemar([[5, lost], [gained, 5]], exact=True).pvalue
            got = paired.mcnemar_exact(gained, lost)
            assert got == (None if gained + lost == 0 else expected), (gained, lost)


def test_verdicts_without_discordant_pairs():
    r = paired.paired_verdicts([1, 0, 1, True], [1, 0, 1, 1.0], ["a", "a", "b", "b"])
    assert (r.gained, r.lost, r.diff, r.ci95, r.p_value, r.mdd) == (0, 0, 0.0, [0.0, 0.0], None, None)
    assert paired.paired_verdicts([], [], []).baseline_value is None


def test_verdicts_interval_resamples_sessions():
    # Session a: two flips 1 -> 0 (mean -1); session b: no change (mean 0). The interval is [-1, 0], not that of
    # three independent pairs.
    r = paired.paired_verdicts([1, 1, 1], [0, 0, 1], ["a", "a", "b"], n_boot=1000)
    assert r.ci95 == [-1.0, 0.0]
    assert r.n_clusters == 2


# --- multiple testing ----------------------------------------------------------------------------


def test_bh_by_hand():
    # m = 4. Sorted: 0.005 x 4/1 = 0.02, 0.01 x 4/2 = 0.02, 0.03 x 4/3 = 0.04, 0.04 x 4/4 = 0.04; the running
    # minimum from the largest down changes nothing. Input order: 0.02, 0.04, 0.04, 0.02.
    assert paired.adjust([0.01, 0.04, 0.03, 0.005], "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # 0.01 x 2/1 = 0.02 but 0.015 x 2/2 = 0.015: the step-up lowers the first to 0.015.
    assert paired.adjust([0.01, 0.015], "bh") == pytest.approx([0.015, 0.015])
    assert paired.adjust([None, 0.01, None, 0.04], "bh") == pytest.approx([None, 0.02, None, 0.04])
    assert paired.adjust([], "bh") == []


@pytest.mark.parametrize(("method", "statsmodels_name"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_adjust_equals_statsmodels_exactly(method, statsmodels_name):
    rng = np.random.default_rng(5)
    for size in (1, 2, 5, 17, 60):
        p = rng.uniform(size=size) ** 3
        p[: size // 3] = p[0]  # ties
        rng.shuffle(p)
        expected = multipletests(p, method=statsmodels_name)[1].tolist()
        assert paired.adjust(p.tolist(), method) == expected
        with_gaps = [None, *p.tolist(), None]
        assert paired.adjust(with_gaps, method) == [None, *expected, None]


def test_adjust_refuses_unknown_methods_and_bad_p_values():
    with pytest.raises(ValueError, match="method"):
        paired.adjust([0.1], "bonferroni")
    with pytest.raises(ValueError, match="not in"):
        paired.adjust([1.5], "bh")


def test_with_adjusted_adds_both_corrections_over_the_family():
    rows = [{"metric": "AVG", "p_value": 0.01}, {"metric": "rate", "p_value": None},
            {"metric": "D1", "p_value": 0.04}]
    out = paired.with_adjusted(rows)
    assert [r["p_holm"] for r in out] == pytest.approx([0.02, None, 0.04])
    assert [r["p_bh"] for r in out] == pytest.approx([0.02, None, 0.04])
    assert "p_holm" not in rows[0]  # copies, the input is left alone


# --- properties ----------------------------------------------------------------------------------

_pairs = st.lists(st.tuples(st.integers(-20, 20), st.integers(-20, 20), st.integers(0, 5)), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(_pairs, st.sampled_from(["wilcoxon", "t"]))
def test_swapping_the_runs_negates_diff_and_interval(rows, test):
    baseline, other, sessions = (list(column) for column in zip(*rows))
    forward = paired.paired_scores(baseline, other, sessions, n_boot=200, test=test)
    backward = paired.paired_scores(other, baseline, sessions, n_boot=200, test=test)
    assert backward.diff == pytest.approx(-forward.diff, abs=1e-12)
    if forward.ci95 is None:
        assert backward.ci95 is None
    else:
        assert backward.ci95 == pytest.approx([-forward.ci95[1], -forward.ci95[0]], abs=1e-9)
    for name in ("p_value", "mdd"):
        value = getattr(forward, name)
        assert getattr(backward, name) == (None if value is None else pytest.approx(value, rel=1e-9))
    assert forward.ci95 is None or forward.ci95[0] <= forward.ci95[1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 5)), min_size=1, max_size=30))
def test_swapping_verdicts_swaps_gains_and_losses(rows):
    baseline, other, sessions = (list(column) for column in zip(*rows))
    forward = paired.paired_verdicts(baseline, other, sessions, n_boot=200)
    backward = paired.paired_verdicts(other, baseline, sessions, n_boot=200)
    assert (backward.gained, backward.lost) == (forward.lost, forward.gained)
    assert backward.diff == pytest.approx(-forward.diff, abs=1e-12)
    assert backward.p_value == forward.p_value
    assert forward.gained + forward.lost <= forward.n_pairs == len(rows)
