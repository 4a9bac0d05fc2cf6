"""Shared statistics: least squares, normalisation and bootstrap intervals.

Every function returns plain Python floats (or None where a number does not exist), never numpy
scalars or NaN, so results can go straight into a JSON document.

Bootstrap functions resample *items* (for example sessions) with replacement. They take either
``n_boot``/``seed`` or a precomputed ``weights`` matrix from :func:`resample_weights`, so a caller
that needs several intervals over the same items can build the matrix once.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

from common.lazy_modules import lazy

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike
else:
    np = lazy("numpy")  # loaded on first use: the app starts without numpy


DEFAULT_N_BOOT = 1000
BLOCK = 250_000  # elements of the temporary arrays of resample_weights and resampled_sums (2 MB each)
DEFAULT_SEED = 0  # of the kinds' bootstrap intervals (recorded in each result's provenance)
DEFAULT_LEVEL = 0.95


class Fit(NamedTuple):
    """Result of an ordinary least squares line fit y = intercept + slope * x."""

    slope: float | None
    intercept: float | None
    r2: float | None


class PairedDifference(NamedTuple):
    """Mean of paired differences a - b with its bootstrap interval, and the paired t-test's two-sided p-value."""

    diff: float | None
    ci95: list[float] | None
    significant: bool
    n: int
    p_value: float | None = None


def as_float(value) -> float | None:
    """Return value as a plain float, or None for None, NaN and infinities."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def ols(xs: ArrayLike, ys: ArrayLike) -> Fit:
    """Least squares y = a + b x; slope/intercept None if < 2 distinct x, r2 None if SS_tot = 0."""
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("ols needs two 1-D sequences of the same length")
    if np.unique(x).size < 2:
        return Fit(None, None, None)
    x_mean, y_mean = x.mean(), y.mean()
    slope = float(np.sum((x - x_mean) * (y - y_mean)) / np.sum((x - x_mean) ** 2))
    intercept = float(y_mean - slope * x_mean)
    # Test for a flat y exactly: y - mean(y) can leave rounding dust even when all y are equal.
    if np.ptp(y) == 0:
        return Fit(slope, intercept, None)
    ss_res = float(np.sum((y - (intercept + slope * x)) ** 2))
    ss_tot = float(np.sum((y - y_mean) ** 2))
    return Fit(slope, intercept, 1.0 - ss_res / ss_tot)


def min_max_normalise(values: ArrayLike) -> list[float]:
    """Scale values to [0, 1] by (v - min) / (max - min); all 0.0 when max == min."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return []
    low, high = arr.min(), arr.max()
    if high == low:
        return [0.0] * arr.size
    return [float(v) for v in (arr - low) / (high - low)]


def resample_indices(n: int, n_boot: int = DEFAULT_N_BOOT, seed: int = 0) -> np.ndarray:
    """Return an (n_boot, n) array of item indices drawn with replacement, reproducible by seed."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(n_boot, n))


def resample_weights(n: int, n_boot: int = DEFAULT_N_BOOT, seed: int = 0) -> np.ndarray:
    """Return an (n_boot, n) matrix of small integers: how often each item is drawn in each resample."""
    rng = np.random.default_rng(seed)
    # uint8 (an eighth of float64's memory: 12.5 MB for 12,500 sessions): an item drawn 256 times in one resample is
    # impossible below 256 items and has a chance below 1e-500 above; it would widen the matrix, not wrap.
    weights = np.empty((n_boot, n), dtype=np.uint8)
    block = max(1, BLOCK // max(n, 1))  # resamples drawn at a time: memory of a few blocks, not of n_boot x n
    for first in range(0, n_boot, block):
        rows = min(block, n_boot - first)
        # The same draws as resample_indices (a generator yields the same numbers in pieces as at once); one
        # bincount over row-offset indices instead of one per resample.
        offsets = (rng.integers(0, n, size=(rows, n)) + n * np.arange(rows)[:, None]).ravel()
        counts = np.bincount(offsets, minlength=rows * n)
        if counts.max(initial=0) > np.iinfo(weights.dtype).max:
            weights = weights.astype(np.int64)
        weights[first:first + rows] = counts.reshape(rows, n)
    return weights


def percentile_interval(
    samples: ArrayLike, level: float = DEFAULT_LEVEL
) -> list[float] | None:
    """Return the central percentile interval [lo, hi] of samples, None if there are none."""
    arr = np.asarray(samples, dtype=float)
    if arr.size == 0:
        return None
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(arr, [tail, 100.0 - tail])
    return [float(lo), float(hi)]


def resampled_sums(weights: np.ndarray, values) -> np.ndarray:
    """weights @ values in float64, BLOCK elements of the weights at a time (a float copy of the whole integer
    weights matrix would take four times its memory, and grow with the sessions). Sums of whole numbers are exact;
    the last bit of others depends on the order BLAS adds them in, which depends on the block's shape."""
    values = np.asarray(values, dtype=float)
    out = np.empty((weights.shape[0],) + values.shape[1:])
    step = max(1, BLOCK // max(1, weights.shape[1]))
    for first in range(0, weights.shape[0], step):
        out[first:first + step] = weights[first:first + step].astype(float) @ values
    return out


def _weights_for(n: int, n_boot: int, seed: int, weights: np.ndarray | None) -> np.ndarray:
    if weights is None:
        return resample_weights(n, n_boot, seed)
    if weights.ndim != 2 or weights.shape[1] != n:
        raise ValueError(f"weights must have shape (n_boot, {n}), got {weights.shape}")
    return weights


def bootstrap_ci(
    values: ArrayLike,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    weights: np.ndarray | None = None,
) -> list[float] | None:
    """Percentile bootstrap interval of the mean of values; None with fewer than 2 values."""
    arr = np.asarray(values, dtype=float)
    if arr.size < 2:
        return None
    w = _weights_for(arr.size, n_boot, seed, weights)
    means = resampled_sums(w, arr) / arr.size
    # A mean lies within [min, max]; clipping only removes float dust, so constant data
    # gives exactly [v, v].
    return percentile_interval(np.clip(means, arr.min(), arr.max()), level)


def bootstrap_curve_mean_ci(
    sums,
    counts,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    weights: np.ndarray | None = None,
) -> list[float] | None:
    """Bootstrap interval of mean_k(sum_i sums[i,k] / sum_i counts[i,k]), resampling rows i.

    Rows are items (sessions), columns are points of a curve (rounds). In each resample a column's
    value is the pooled mean of the drawn rows that have data there, and the statistic averages the
    columns that have any data in that resample, so ragged rows are handled as in the point
    estimate.
    With a single column this is the bootstrap of a pooled mean sum(sums) / sum(counts).
    Rows without any count are dropped first; None when fewer than 2 rows remain.
    """
    sums = np.asarray(sums, dtype=float)
    counts = np.asarray(counts, dtype=float)
    if sums.ndim == 1:
        sums, counts = sums[:, None], counts[:, None]
    if sums.shape != counts.shape:
        raise ValueError("sums and counts must have the same shape")
    keep = counts.sum(axis=1) > 0
    if weights is not None and not keep.all():
        raise ValueError("with precomputed weights every row must have data")
    sums, counts = sums[keep], counts[keep]
    if sums.shape[0] < 2:
        return None
    w = _weights_for(sums.shape[0], n_boot, seed, weights)
    boot_sums, boot_counts = resampled_sums(w, sums), resampled_sums(w, counts)
    present = boot_counts > 0
    column_means = np.divide(boot_sums, boot_counts, out=np.zeros_like(boot_sums), where=present)
    stats = column_means.sum(axis=1) / present.sum(axis=1)
    cell_means = sums[counts > 0] / counts[counts > 0]
    return percentile_interval(np.clip(stats, cell_means.min(), cell_means.max()), level)


def bootstrap_column_means_ci(
    sums,
    counts,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    weights: np.ndarray | None = None,
) -> list[list[float] | None]:
    """Per column k, the bootstrap interval of sum_i sums[i,k] / sum_i counts[i,k], resampling rows i.

    This is the interval of each point of a curve (AL(k) or BAR(k)) over the sessions that have that
    round; a column with fewer than 2 rows of data gets None.
    """
    sums = np.asarray(sums, dtype=float)
    counts = np.asarray(counts, dtype=float)
    w = _weights_for(sums.shape[0], n_boot, seed, weights)
    boot_sums, boot_counts = resampled_sums(w, sums), resampled_sums(w, counts)
    out: list[list[float] | None] = []
    for k in range(sums.shape[1]):
        has = counts[:, k] > 0
        if has.sum() < 2:
            out.append(None)
            continue
        drawn = boot_counts[:, k] > 0
        means = boot_sums[drawn, k] / boot_counts[drawn, k]
        cells = sums[has, k] / counts[has, k]
        out.append(percentile_interval(np.clip(means, cells.min(), cells.max()), level))
    return out


def paired_difference(
    first: ArrayLike,
    second: ArrayLike,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    weights: np.ndarray | None = None,
) -> PairedDifference:
    """Mean of a[i] - b[i] with a bootstrap CI over pairs (significant when it excludes 0) and the p-value of a paired
    t-test (None with fewer than 2 pairs; 0 or 1 when every pair differs by the same amount), which
    multiple-comparison corrections need: a bootstrap p-value cannot go below 1 / n_boot."""
    a = np.asarray(first, dtype=float)
    b = np.asarray(second, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("paired_difference needs two 1-D sequences of the same length")
    if a.size == 0:
        return PairedDifference(None, None, False, 0)
    diffs = a - b
    ci = bootstrap_ci(diffs, n_boot, seed, level, weights)
    significant = ci is not None and (ci[0] > 0 or ci[1] < 0)
    p_value = None
    if diffs.size >= 2 and np.ptp(diffs) > 0:
        p_value = t_test_p_value(diffs)
    elif diffs.size >= 2:  # every pair differs by the same amount: the t statistic's limit
        p_value = 1.0 if diffs[0] == 0 else 0.0
    return PairedDifference(float(diffs.mean()), ci, significant, int(a.size), p_value)


# --- Student's t, without scipy.stats -------------------------------------------------------------------------------
#
# scipy.stats takes 0.5-0.7 s of CPU and 50 MB to import, and every dialogue evaluation needs only these three
# numbers from it. They are computed here with scipy's own arithmetic, step for step, and its own distribution
# functions (scipy.special.stdtr and stdtrit, Boost's, which scipy.stats.t calls and whose package loads in a
# quarter of the time), so that every result is bit for bit what scipy.stats gives (tests/kinds/test_stats.py).


def t_test_p_value(values: np.ndarray) -> float:
    """Two-sided p-value of Student's one-sample t-test of mean 0 over 2 or more values that are not all equal:
    scipy.stats.ttest_1samp(values, 0.0).pvalue."""
    from scipy.special import stdtr  # on first use, as scipy.stats was

    n = values.size
    mean = np.mean(values)
    variance = np.mean((values - np.mean(values, keepdims=True)) ** 2) * (np.float64(n) / np.float64(n - 1))
    with np.errstate(divide="ignore", invalid="ignore"):  # a variance that underflows to 0: t infinite, p 0
        t = mean / np.sqrt(variance / n)
    return float(2 * stdtr(np.float64(n - 1), -np.abs(t)))


def t_quantile(q: float, df: int) -> float:
    """The q-quantile of Student's t distribution with df > 0 degrees of freedom: scipy.stats.t.ppf(q, df)."""
    from scipy.special import stdtrit

    return float(stdtrit(float(df), q))


def average_ranks(values: ArrayLike) -> np.ndarray:
    """Ranks 1..n of values without NaN, tied values given the mean of their ranks: scipy.stats.rankdata(values)."""
    x = np.asarray(values, dtype=float).ravel()
    order = np.argsort(x, kind="stable")
    ordered = x[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])  # where each run of equal values begins
    counts = np.diff(np.r_[starts, x.size])
    ranks = np.empty(x.size)
    ranks[order] = np.repeat(starts + (counts + 1) / 2, counts)  # a run at i..i+c-1 ranks i+1..i+c: mean i+(c+1)/2
    return ranks


# --- two independent groups: a test of their difference and its effect size --------------------------------------


class ChiSquare(NamedTuple):
    """Pearson's chi-square test of independence of a groups x categories table, and Cramér's V."""

    statistic: float | None
    df: int
    p_value: float | None
    cramers_v: float | None


class MannWhitney(NamedTuple):
    """The Mann-Whitney U test of two samples (U of the first), and the rank-biserial correlation."""

    u: float | None
    p_value: float | None
    rank_biserial: float | None  # 2 U / (n1 n2) - 1: +1 when every first value is above every second


def chi_square_independence(table: ArrayLike) -> ChiSquare:
    """Chi-square test of a groups x categories count table without Yates' correction, categories nobody has left
    out; Cramér's V = sqrt(chi2 / (n (min(rows, columns) - 1))). None values with an empty group or one category."""
    counts = np.asarray(table, dtype=float)
    counts = counts[:, counts.sum(axis=0) > 0]
    if counts.ndim != 2 or counts.shape[0] < 2 or counts.shape[1] < 2 or (counts.sum(axis=1) == 0).any():
        return ChiSquare(None, 0, None, None)
    from scipy.stats import chi2_contingency  # slow to import: on first use

    test = chi2_contingency(counts, correction=False)
    n, smaller = counts.sum(), min(counts.shape) - 1
    return ChiSquare(as_float(test.statistic), int(test.dof), as_float(test.pvalue),
                     as_float(math.sqrt(test.statistic / (n * smaller))))


def mann_whitney(first: ArrayLike, second: ArrayLike) -> MannWhitney:
    """Two-sided Mann-Whitney U test (scipy's default: exact without ties in small samples, else the normal
    approximation with tie and continuity corrections) and the rank-biserial correlation; None without values."""
    a = np.asarray(first, dtype=float)
    b = np.asarray(second, dtype=float)
    if a.size == 0 or b.size == 0:
        return MannWhitney(None, None, None)
    from scipy.stats import mannwhitneyu

    test = mannwhitneyu(a, b, alternative="two-sided")
    return MannWhitney(as_float(test.statistic), as_float(test.pvalue),
                       as_float(2.0 * test.statistic / (a.size * b.size) - 1.0))


# --- Jensen-Shannon (the mobility benchmark, docs/metrics.md) -----------------------------------
#
# `official_*` reproduce AgentSociety's DailyMobility evaluation code operation for operation:
# numpy.histogram(x, bins=50, density=True) over each array's own range, + 1e-10, normalised to sum 1,
# and scipy's jensenshannon (natural log), which is the JS *distance* (the square root of the
# divergence). `js_divergence_bits` is the strict variant's JS *divergence* in bits, in [0, 1].

OFFICIAL_BINS = 50
OFFICIAL_EPSILON = 1e-10
STRICT_BINS = 50


def official_density(values, weights=None, bins: int = OFFICIAL_BINS) -> np.ndarray:
    """numpy.histogram(values, bins, density=True)[0] over the values' own range.

    With weights, value i counts weights[i] times: the density of a few distinct values with their
    counts is exactly that of the expanded array (same range, same bins, same arithmetic), which lets
    a caller that already has counts (e.g. of intention codes) skip a pass over millions of items.
    """
    return np.histogram(values, bins=bins, density=True, weights=weights)[0]


def official_js_distance(density1: np.ndarray, density2: np.ndarray) -> float:
    """AgentSociety's JSD of two official densities: + 1e-10, normalise to sum 1, scipy jensenshannon.

    The only departure from its code: where scipy returns NaN (see below), this returns 0.0.
    """
    from scipy.spatial.distance import jensenshannon

    hist1 = density1 + OFFICIAL_EPSILON
    hist2 = density2 + OFFICIAL_EPSILON
    hist1 = hist1 / np.sum(hist1)
    hist2 = hist2 / np.sum(hist2)
    with np.errstate(invalid="ignore"):
        jsd = float(jensenshannon(hist1, hist2))
    # For two (almost) equal histograms the divergence can round to a tiny negative number, whose
    # square root scipy returns as NaN; the true value is 0 within rounding, and a score needs a number.
    return 0.0 if math.isnan(jsd) else jsd


def official_jsd(data1, data2, bins: int = OFFICIAL_BINS) -> float:
    """The official metric of two arrays (flattened to 1-D first), each binned over its own range."""
    return official_js_distance(official_density(np.ravel(data1), bins=bins),
                                official_density(np.ravel(data2), bins=bins))


def js_divergence_bits(p, q) -> float:
    """Jensen-Shannon divergence in bits, in [0, 1], of two non-negative weight vectors of one shape.

    The vectors are normalised to sum 1 here (no epsilon). This is
    scipy.spatial.distance.jensenshannon(p, q, base=2) ** 2 computed without the square root, so equal
    inputs give exactly 0 and rounding can never leave the [0, 1] range (or give NaN).
    """
    from scipy.special import rel_entr

    p = np.asarray(p, dtype=float).ravel()
    q = np.asarray(q, dtype=float).ravel()
    if p.shape != q.shape:
        raise ValueError(f"js_divergence_bits needs two vectors of one length, got {p.size} and {q.size}")
    p_sum, q_sum = p.sum(), q.sum()
    valid_sums = p_sum > 0 and q_sum > 0 and math.isfinite(p_sum) and math.isfinite(q_sum)
    if not valid_sums or p.min() < 0 or q.min() < 0:
        raise ValueError("js_divergence_bits needs finite non-negative weights with a positive sum")
    p = p / p_sum
    q = q / q_sum
    m = (p + q) / 2.0
    js = (np.sum(rel_entr(p, m)) + np.sum(rel_entr(q, m))) / (2.0 * math.log(2.0))
    return float(min(max(js, 0.0), 1.0))


def shared_histograms(a, b, bins: int = STRICT_BINS,
                      value_range: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts of a and b on the same equal bins: over value_range, else over their joint [min, max].

    Returns (edges, counts_a, counts_b). A joint range of one value is widened by 0.5 on each side, as
    numpy.histogram does.
    """
    a = np.ravel(a)
    b = np.ravel(b)
    if value_range is None:
        value_range = (float(min(a.min(), b.min())), float(max(a.max(), b.max())))
    counts_a, edges = np.histogram(a, bins=bins, range=value_range)
    counts_b, _ = np.histogram(b, bins=bins, range=value_range)
    return edges, counts_a, counts_b
