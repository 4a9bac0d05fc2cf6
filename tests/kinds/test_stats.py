"""Unit tests for kinds.stats against hand-computed values and independent references."""

import math

import numpy as np
import pytest
import scipy.stats

from kinds import stats

# --- ols ---------------------------------------------------------------------------------------


def test_ols_perfect_line():
    # y = 3 + 2x exactly: slope 2, intercept 3, no residual so R2 = 1.
    fit = stats.ols([1, 2, 3, 4, 5], [5, 7, 9, 11, 13])
    assert fit.slope == pytest.approx(2.0)
    assert fit.intercept == pytest.approx(3.0)
    assert fit.r2 == pytest.approx(1.0)


def test_ols_perfect_decreasing_line():
    fit = stats.ols([0, 10, 20], [100, 50, 0])
    assert fit == pytest.approx((-5.0, 100.0, 1.0))


def test_ols_known_noisy_set_by_hand():
    # x = 1..4, y = 60, 70, 90, 100.  x_mean = 2.5, y_mean = 80.
    # Sxy = (-1.5)(-20) + (-0.5)(-10) + (0.5)(10) + (1.5)(20) = 70, Sxx = 5  -> slope 14.
    # intercept = 80 - 14 * 2.5 = 45.  Fitted 59, 73, 87, 101 -> residuals 1, -3, 3, -1.
    # SS_res = 1 + 9 + 9 + 1 = 20, SS_tot = 400 + 100 + 100 + 400 = 1000 -> R2 = 0.98.
    fit = stats.ols([1, 2, 3, 4], [60, 70, 90, 100])
    assert fit.slope == pytest.approx(14.0)
    assert fit.intercept == pytest.approx(45.0)
    assert fit.r2 == pytest.approx(0.98)


def test_ols_matches_numpy_polyfit_and_corrcoef():
    rng = np.random.default_rng(42)
    x = np.arange(1, 21, dtype=float)
    y = 50 + 1.7 * x + rng.normal(0, 5, x.size)
    fit = stats.ols(x, y)
    slope, intercept = np.polyfit(x, y, 1)
    assert fit.slope == pytest.approx(slope)
    assert fit.intercept == pytest.approx(intercept)
    # For a simple linear fit R2 is the squared Pearson correlation: an independent formula.
    assert fit.r2 == pytest.approx(np.corrcoef(x, y)[0, 1] ** 2)


def test_ols_returns_plain_floats():
    fit = stats.ols(np.array([1, 2, 3]), np.array([1.0, 3.0, 2.0]))
    assert all(type(v) is float for v in fit)


@pytest.mark.parametrize("x, y", [([3], [50]), ([2, 2, 2], [1, 2, 3]), ([], [])])
def test_ols_needs_two_distinct_x(x, y):
    assert stats.ols(x, y) == (None, None, None)


def test_ols_flat_y_has_no_r2():
    # y constant: the best line is flat through it; SS_tot = 0 so R2 is undefined.
    fit = stats.ols([1, 2, 3], [70, 70, 70])
    assert fit.slope == pytest.approx(0.0)
    assert fit.intercept == pytest.approx(70.0)
    assert fit.r2 is None


def test_ols_flat_y_with_inexact_float_mean_has_no_r2():
    # mean([0.1, 0.1, 0.1]) != 0.1 in floating point; R2 must still be None, not rounding dust.
    assert stats.ols([1, 2, 3], [0.1, 0.1, 0.1]).r2 is None


def test_ols_rejects_mismatched_lengths():
    with pytest.raises(ValueError):
        stats.ols([1, 2, 3], [1, 2])


# --- min_max_normalise ---------------------------------------------------------------------------


def test_min_max_normalise_by_hand():
    # min 65, max 86, range 21: (65, 76, 86) -> (0, 11/21, 1).
    assert stats.min_max_normalise([65, 76, 86]) == pytest.approx([0.0, 11 / 21, 1.0])


def test_min_max_normalise_constant_is_all_zero():
    assert stats.min_max_normalise([70.0, 70.0, 70.0]) == [0.0, 0.0, 0.0]


def test_min_max_normalise_empty_and_types():
    assert stats.min_max_normalise([]) == []
    out = stats.min_max_normalise(np.array([1, 3]))
    assert out == [0.0, 1.0] and all(type(v) is float for v in out)


# --- as_float / percentile_interval --------------------------------------------------------------


def test_as_float():
    assert stats.as_float(None) is None
    assert stats.as_float(float("nan")) is None
    assert stats.as_float(np.inf) is None
    value = stats.as_float(np.float64(2.5))
    assert value == 2.5 and type(value) is float


def test_percentile_interval():
    # 0..100: the 2.5th and 97.5th percentiles (linear interpolation) are 2.5 and 97.5.
    assert stats.percentile_interval(np.arange(101)) == pytest.approx([2.5, 97.5])
    assert stats.percentile_interval(np.arange(101), level=0.9) == pytest.approx([5.0, 95.0])
    assert stats.percentile_interval([]) is None


# --- resampling ---------------------------------------------------------------------------------


def test_resample_indices_reproducible_and_in_range():
    a = stats.resample_indices(7, n_boot=50, seed=3)
    b = stats.resample_indices(7, n_boot=50, seed=3)
    c = stats.resample_indices(7, n_boot=50, seed=4)
    assert a.shape == (50, 7)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.min() >= 0 and a.max() <= 6


def test_resample_weights_count_the_indices():
    idx = stats.resample_indices(5, n_boot=20, seed=9)
    w = stats.resample_weights(5, n_boot=20, seed=9)
    expected = np.array([np.bincount(row, minlength=5) for row in idx])
    assert np.array_equal(w, expected)
    assert np.all(w.sum(axis=1) == 5)


def test_resample_weights_are_one_byte_each_and_widen_for_an_item_drawn_more_than_255_times(monkeypatch):
    assert stats.resample_weights(300, n_boot=40, seed=2).dtype == np.uint8

    class FirstItemAlways:  # a generator whose every draw is item 0: drawn n times in each resample
        def __init__(self, seed):
            pass

        def integers(self, low, high, size):
            return np.zeros(size, dtype=np.int64)

    monkeypatch.setattr(np.random, "default_rng", FirstItemAlways)
    weights = stats.resample_weights(300, n_boot=3, seed=0)
    assert weights[:, 0].tolist() == [300, 300, 300] and weights[:, 1:].sum() == 0


def test_resample_weights_drawn_in_blocks_are_the_draws_made_at_once(monkeypatch):
    idx = stats.resample_indices(300, n_boot=40, seed=2)
    expected = np.array([np.bincount(row, minlength=300) for row in idx])
    for block in (1, 299, 301, 7_000, 10**7):  # one resample per block, several, or all at once
        monkeypatch.setattr(stats, "BLOCK", block)
        assert np.array_equal(stats.resample_weights(300, n_boot=40, seed=2), expected)


def test_resampled_sums_of_whole_numbers_are_the_same_bits_in_blocks_of_any_size(monkeypatch):
    weights = stats.resample_weights(2_000, n_boot=1000, seed=4)
    rng = np.random.default_rng(1)
    for values in (rng.integers(0, 400, 2_000).astype(float), rng.integers(-20, 21, (2_000, 5)).astype(float)):
        at_once = weights.astype(float) @ values  # exact: whole numbers far below 2**53
        assert np.array_equal(at_once, weights.astype(np.int64) @ values.astype(np.int64))
        for block in (1, 6_000, 250_000):  # 1, 3 and 125 resamples per block
            monkeypatch.setattr(stats, "BLOCK", block)
            assert stats.resampled_sums(weights, values).tobytes() == at_once.tobytes()


@pytest.mark.parametrize("values", [np.arange(2_000.0), np.arange(2_000.0) / 7])  # whole numbers, or not
def test_resampled_sums_copy_a_small_block_of_the_weights(values):
    import tracemalloc

    weights = stats.resample_weights(2_000, n_boot=1000, seed=4)  # as float64, 16 MB
    tracemalloc.start()
    try:
        stats.resampled_sums(weights, values)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * stats.BLOCK * 8  # a 2 MB block of floats, not the whole matrix


# --- bootstrap_ci (mean) ------------------------------------------------------------------------


def test_bootstrap_ci_matches_slow_loop_with_same_indices():
    values = np.array([3.0, 9.0, 4.0, 15.0, 8.0, 1.0, 12.0, 7.0])
    idx = stats.resample_indices(values.size, n_boot=1000, seed=5)
    slow = [values[row].mean() for row in idx]
    expected = np.percentile(slow, [2.5, 97.5])
    assert stats.bootstrap_ci(values, n_boot=1000, seed=5) == pytest.approx(list(expected))


def test_bootstrap_ci_contains_mean_and_is_reproducible():
    values = np.random.default_rng(1).normal(50, 10, 40)
    ci = stats.bootstrap_ci(values, seed=11)
    assert ci[0] <= values.mean() <= ci[1]
    assert ci[0] < ci[1]
    assert stats.bootstrap_ci(values, seed=11) == ci
    assert stats.bootstrap_ci(values, seed=12) != ci


def test_bootstrap_ci_constant_is_exact():
    # 73.3 is not exactly representable; the interval must still be exactly [73.3, 73.3].
    assert stats.bootstrap_ci([73.3] * 9) == [73.3, 73.3]


def test_bootstrap_ci_needs_two_values():
    assert stats.bootstrap_ci([5.0]) is None
    assert stats.bootstrap_ci([]) is None


def test_bootstrap_ci_rejects_wrong_weights_shape():
    with pytest.raises(ValueError):
        stats.bootstrap_ci([1.0, 2.0, 3.0], weights=stats.resample_weights(4, 10))


# --- bootstrap_curve_mean_ci --------------------------------------------------------------------


def _slow_curve_mean(sums, counts, row_indices):
    """Obvious loop: per column, pool the drawn rows that have data; average present columns."""
    column_means = []
    for k in range(sums.shape[1]):
        total = sum(sums[i, k] for i in row_indices if counts[i, k] > 0)
        n = sum(counts[i, k] for i in row_indices)
        if n > 0:
            column_means.append(total / n)
    return sum(column_means) / len(column_means)


def test_curve_mean_ci_matches_slow_loop_on_ragged_rows():
    rng = np.random.default_rng(2)
    lengths = [2, 4, 3, 1, 4, 2, 3, 4, 1, 2]
    counts = np.zeros((len(lengths), 4))
    for i, length in enumerate(lengths):
        counts[i, :length] = 1
    sums = np.round(rng.uniform(30, 90, counts.shape), 1) * counts
    idx = stats.resample_indices(len(lengths), n_boot=300, seed=8)
    slow = [_slow_curve_mean(sums, counts, row) for row in idx]
    expected = np.percentile(slow, [2.5, 97.5])
    ci = stats.bootstrap_curve_mean_ci(sums, counts, n_boot=300, seed=8)
    assert ci == pytest.approx(list(expected))


def test_curve_mean_ci_single_column_is_pooled_mean():
    # Rows carry (sum, count) = (2, 3), (1, 1), (0, 2): a resample's statistic is sum/sum.
    sums, counts = np.array([2.0, 1.0, 0.0]), np.array([3.0, 1.0, 2.0])
    idx = stats.resample_indices(3, n_boot=200, seed=1)
    slow = [sums[row].sum() / counts[row].sum() for row in idx]
    ci = stats.bootstrap_curve_mean_ci(sums, counts, n_boot=200, seed=1)
    assert ci == pytest.approx(list(np.percentile(slow, [2.5, 97.5])))


def test_curve_mean_ci_constant_and_small():
    counts = np.array([[1, 1, 0], [1, 1, 1], [1, 0, 0]], dtype=float)
    assert stats.bootstrap_curve_mean_ci(counts * 61.7, counts) == [61.7, 61.7]
    # Rows without any data are dropped: one usable row is not enough for an interval.
    assert stats.bootstrap_curve_mean_ci([[5.0], [0.0]], [[1.0], [0.0]]) is None


def test_curve_mean_ci_rejects_shape_mismatch():
    with pytest.raises(ValueError):
        stats.bootstrap_curve_mean_ci(np.zeros((3, 2)), np.ones((3, 3)))


# --- paired_difference --------------------------------------------------------------------------


def test_paired_difference_constant_gap_of_ten():
    b = np.array([40.0, 55.0, 61.0, 72.0, 80.0])
    result = stats.paired_difference(b + 10, b)
    assert result.diff == 10.0
    assert result.ci95 == [10.0, 10.0]
    assert result.significant is True
    assert result.n == 5


def test_paired_difference_identical_is_not_significant():
    a = [40.0, 55.0, 61.0]
    result = stats.paired_difference(a, a)
    assert result.diff == 0.0
    assert result.ci95 == [0.0, 0.0]
    assert result.significant is False


def test_paired_difference_noise_around_zero_is_not_significant():
    # Differences +5, -5, +5, -5, ...: mean 0 and the interval straddles 0.
    b = np.full(20, 50.0)
    a = b + np.tile([5.0, -5.0], 10)
    result = stats.paired_difference(a, b)
    assert result.diff == pytest.approx(0.0)
    assert result.ci95[0] < 0 < result.ci95[1]
    assert result.significant is False


def test_paired_difference_negative_gap_is_significant():
    result = stats.paired_difference([1.0, 2.0, 3.0], [4.0, 6.0, 5.0])
    # Differences -3, -4, -2: mean -3, every resample mean lies in [-4, -2].
    assert result.diff == pytest.approx(-3.0)
    assert -4.0 <= result.ci95[0] <= result.ci95[1] <= -2.0
    assert result.significant is True


def test_paired_difference_degenerate_sizes():
    assert stats.paired_difference([], []) == (None, None, False, 0, None)
    single = stats.paired_difference([7.0], [2.0])
    assert single.diff == 5.0 and single.ci95 is None and single.significant is False
    assert single.n == 1 and single.p_value is None


def test_paired_difference_p_value_is_the_paired_t_test():
    a, b = [1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 1.0, 3.0]
    # differences 1, 1, 2, 1: mean 1.25, sd 0.5, t = 1.25 / (0.5 / 2) = 5 with 3 degrees of freedom
    assert stats.paired_difference(a, b).p_value == pytest.approx(2 * scipy.stats.t.sf(5.0, 3))
    assert stats.paired_difference(a, b).p_value == pytest.approx(scipy.stats.ttest_rel(a, b).pvalue)
    assert stats.paired_difference([3.0, 4.0], [1.0, 2.0]).p_value == 0.0  # the same difference every time
    assert stats.paired_difference([3.0, 4.0], [3.0, 4.0]).p_value == 1.0
    with pytest.raises(ValueError):
        stats.paired_difference([1.0, 2.0], [1.0])


# The three numbers a dialogue evaluation used scipy.stats for, computed without importing it: equal to scipy's to
# the last bit (the compatibility fixtures print them whole), over samples of every size an evaluation has.


def _samples():
    rng = np.random.default_rng(42)
    for n in (2, 3, 5, 10, 47, 200, 1999, 20000):
        yield rng.normal(0.3, 2.0, n)  # continuous
        yield rng.integers(-3, 4, n).astype(float)  # many ties, and a mean near 0
        yield rng.normal(50.0, 1e-6, n)  # values close together: a large t
        yield np.round(rng.normal(5.0, 20.0, n), 1) / 3  # scores as the dialogue kind's means make them
    yield np.array([1.0, 1.0, 2.0, 1.0])
    yield np.array([0.0, 1e-300])  # a p-value that underflows towards 0
    yield np.array([-4.0, 4.0, 1e-9])  # t near 0: a p-value near 1


def test_t_test_p_value_is_scipys_ttest_1samp_bit_for_bit():
    for values in _samples():
        if np.ptp(values) > 0:
            assert stats.t_test_p_value(values) == float(scipy.stats.ttest_1samp(values, 0.0).pvalue), values[:5]


def test_t_test_p_value_by_hand():
    # 1, 1, 2, 1: mean 1.25, sd 0.5, t = 1.25 / (0.5 / 2) = 5 with 3 degrees of freedom; P(|T| > 5) for T ~ t(3) is
    # 1 - (2/pi) (atan(5/sqrt 3) + sqrt(3) 5 / (3 + 25)), the closed form of the t distribution with 3 degrees
    theta = math.atan(5 / math.sqrt(3))
    by_hand = 1 - 2 / math.pi * (theta + math.sin(theta) * math.cos(theta))
    assert stats.t_test_p_value(np.array([1.0, 1.0, 2.0, 1.0])) == pytest.approx(by_hand, rel=1e-14)


def test_t_quantile_is_scipys_t_ppf_bit_for_bit():
    for df in (1, 2, 3, 7, 30, 137, 1000, 123456):
        for q in (0.5, 0.9, 0.95, 0.975, 0.995, 0.025):
            assert stats.t_quantile(q, df) == float(scipy.stats.t.ppf(q, df)), (q, df)
    assert stats.t_quantile(0.975, 1) == pytest.approx(math.tan(math.pi * 0.475), rel=1e-14)  # Cauchy's, by hand


def test_average_ranks_are_scipys_rankdata():
    for values in _samples():
        assert np.array_equal(stats.average_ranks(values), scipy.stats.rankdata(values))
    assert stats.average_ranks([10.0, 30.0, 20.0, 30.0, 10.0]).tolist() == [1.5, 4.5, 3.0, 4.5, 1.5]
    assert stats.average_ranks([]).tolist() == []


def test_no_nan_leaks():
    values = [1.0, 2.0, 3.0]
    for number in stats.bootstrap_ci(values) + list(stats.ols([1, 2, 3], values)):
        assert number is None or math.isfinite(number)


def test_chi_square_independence_leaves_out_empty_categories_and_matches_scipy():
    from scipy.stats.contingency import association

    table = [[12, 0, 5, 3], [4, 0, 9, 8]]
    reduced = [[12, 5, 3], [4, 9, 8]]
    expected = scipy.stats.chi2_contingency(reduced, correction=False)
    found = stats.chi_square_independence(table)
    assert found.statistic == pytest.approx(expected.statistic) and found.df == 2
    assert found.p_value == pytest.approx(expected.pvalue)
    assert found.cramers_v == pytest.approx(association(reduced, method="cramer", correction=False))
    assert stats.chi_square_independence([[3, 0], [5, 0]]) == stats.ChiSquare(None, 0, None, None)  # one category
    assert stats.chi_square_independence([[3, 2], [0, 0]]).p_value is None  # an empty group


def test_mann_whitney_by_hand_without_ties():
    # 1, 2, 3 against 4, 5: no first value above a second one: U = 0, r = -1; exact p = 2 x 1 / C(5, 2)
    found = stats.mann_whitney([1, 2, 3], [4, 5])
    assert (found.u, found.rank_biserial) == (0.0, -1.0)
    assert found.p_value == pytest.approx(2 / math.comb(5, 2))
    assert stats.mann_whitney([], [1, 2]) == stats.MannWhitney(None, None, None)
