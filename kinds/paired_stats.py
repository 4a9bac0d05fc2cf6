"""The math of comparing two runs on the samples they share.

A *pair* is one sample (a session's round, a task) scored in both runs; ``clusters`` names each pair's session.
Rounds of one session are not independent, so:

- every figure is the one the result document defines, over the pairs: the mean of the pairs' values, or for a
  figure averaged over strata first (``strata``: dialogue's AVG is the mean over rounds of AL(k)), the mean over
  the strata of each stratum's mean. When both runs have every sample, the two figures are the two results' own;
- the interval resamples whole sessions with replacement (a cluster bootstrap): each resample recomputes the
  difference from the drawn sessions' pairs by the same definition as the point estimate;
- the paired test of a score (Wilcoxon signed-rank or paired t) runs on the sessions' mean differences, one number
  per session; with one pair per session that is the usual test on the pairs;
- the minimum detectable difference (MDD) is that of a two-sided paired t-test at alpha 0.05 with 80% power on
  those session differences: the smallest true mean difference this many sessions, this spread, would detect
  four times in five. It is exact (the noncentral t distribution, as statsmodels' TTestPower), not the usual
  approximation (t_{1-alpha/2} + t_{power}) * sd / sqrt(n).

McNemar's test of binary verdicts counts pairs, as the test is defined; it takes pairs as independent, so with
several rounds per session its p-value is too small, and the session-resampling interval is the figure to trust.
Their MDD is the same t-based figure on the sessions' mean differences of the 0/1 verdicts: a normal approximation
for binary data, fair with a few dozen sessions, that takes the observed spread (how often verdicts flip) as known.

Pairs where either value is missing (None or NaN) are left out. Every figure is a plain float, or None where it
does not exist (no pairs, one session, no variation where a spread is needed): none is ever made up.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Hashable, NamedTuple, Sequence

from common.lazy_modules import lazy
from kinds.comparisons import benjamini_hochberg, holm
from kinds.stats import (
    DEFAULT_LEVEL,
    DEFAULT_N_BOOT,
    bootstrap_curve_mean_ci,
    percentile_interval,
    resample_weights,
    resampled_sums,
)

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")  # loaded on first use: the app starts without numpy

ALPHA = 0.05
POWER = 0.8
TESTS = ("wilcoxon", "t")
CORRECTIONS = {"holm": holm, "bh": benjamini_hochberg}


class PairedScores(NamedTuple):
    """Paired comparison of a continuous score: other run minus baseline, over the shared samples."""

    baseline_value: float | None  # mean of the baseline over the pairs
    value: float | None  # mean of the other run over the pairs
    diff: float | None  # value - baseline_value, the mean of the paired differences
    ci95: list[float] | None  # cluster-bootstrap percentile interval of diff (at `level`; None below 2 sessions)
    p_value: float | None
    test: str  # "wilcoxon" or "t", run on the sessions' mean differences
    n_pairs: int
    n_clusters: int
    mdd: float | None  # minimum detectable difference at 80% power, alpha 0.05 two-sided


class PairedVerdicts(NamedTuple):
    """Paired comparison of binary verdicts (0/1): rate of the other run minus rate of the baseline."""

    baseline_value: float | None  # share of 1s in the baseline over the pairs
    value: float | None
    diff: float | None
    ci95: list[float] | None
    p_value: float | None  # McNemar's exact test; None without a discordant pair
    test: str  # "mcnemar"
    n_pairs: int
    n_clusters: int
    mdd: float | None
    gained: int  # pairs 0 in the baseline and 1 in the other run
    lost: int  # pairs 1 in the baseline and 0 in the other run


class _Pairs(NamedTuple):
    baseline: np.ndarray
    other: np.ndarray
    codes: np.ndarray  # the session of each pair, numbered 0.. in order of first appearance
    n_clusters: int
    strata: np.ndarray  # the stratum of each pair, numbered 0..; all 0 when the figure is a plain mean
    n_strata: int


def _numbered(labels, keep: np.ndarray) -> tuple[np.ndarray, int]:
    """The kept labels numbered 0.. in order of first appearance, and how many there are."""
    index: dict[Hashable, int] = {}
    codes = np.array([index.setdefault(c, len(index)) for c, k in zip(labels, keep) if k], dtype=np.intp)
    return codes, len(index)


def _pairs(baseline: Sequence, other: Sequence, clusters: Sequence[Hashable],
           strata: Sequence[Hashable] | None = None) -> _Pairs:
    """The complete pairs, their sessions and their strata numbered in order of first appearance."""
    a = np.array(baseline, dtype=float)  # None becomes NaN
    b = np.array(other, dtype=float)
    if a.ndim != 1 or a.shape != b.shape or len(clusters) != a.size or (strata is not None and len(strata) != a.size):
        raise ValueError("baseline, other, clusters and strata must be 1-D sequences of the same length")
    keep = ~(np.isnan(a) | np.isnan(b))
    codes, n_clusters = _numbered(clusters, keep)
    strata_codes, n_strata = _numbered([0] * a.size if strata is None else strata, keep)
    return _Pairs(a[keep], b[keep], codes, n_clusters, strata_codes, n_strata)


def mean_of_strata(values: np.ndarray, strata: np.ndarray, n_strata: int) -> float:
    """The mean over strata of each stratum's mean (with one stratum, the plain mean): dialogue's AVG is the mean
    over rounds of AL(k), each round's mean over sessions."""
    if n_strata <= 1:
        return float(np.mean(values))
    sums = np.bincount(strata, weights=values, minlength=n_strata)
    counts = np.bincount(strata, minlength=n_strata)
    return float(np.mean(sums / counts))


def cluster_bootstrap_ci(pairs: _Pairs, n_boot: int = DEFAULT_N_BOOT, seed: int = 0,
                         level: float = DEFAULT_LEVEL) -> list[float] | None:
    """Percentile interval of the difference (mean_of_strata of other - baseline), resampling sessions: each
    resample recomputes the same figure from the drawn sessions' pairs; None below 2 sessions."""
    cells = pairs.codes * pairs.n_strata + pairs.strata
    size = pairs.n_clusters * pairs.n_strata
    sums = np.bincount(cells, weights=pairs.other - pairs.baseline, minlength=size)
    counts = np.bincount(cells, minlength=size).astype(float)
    shape = (pairs.n_clusters, pairs.n_strata)
    return bootstrap_curve_mean_ci(sums.reshape(shape), counts.reshape(shape), n_boot, seed, level)


def _power(effect: float, n: int, alpha: float) -> float:
    """Power of the two-sided one-sample t-test with n observations at standardised effect `effect`."""
    from scipy.stats import nct, t  # slow to import: on first use

    df = n - 1
    crit = float(t.isf(alpha / 2.0, df))
    shift = effect * math.sqrt(n)
    # P(T < -crit) written as the upper tail at -shift: scipy's lower tail can return NaN far out.
    return float(nct.sf(crit, df, shift) + nct.sf(crit, df, -shift))


def min_detectable_effect(n: int, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """Standardised effect (mean / sd) a two-sided paired t-test on n pairs detects with this power; None below 2."""
    if n < 2:
        return None
    from scipy.optimize import brentq

    high = 1.0
    while _power(high, n, alpha) < power:
        high *= 2.0
    return float(brentq(lambda e: _power(e, n, alpha) - power, 0.0, high, xtol=1e-12, rtol=1e-12))


def _mdd(cluster_diffs: np.ndarray) -> float | None:
    """The minimum detectable mean difference for these session differences; None below 2 or with no spread."""
    if cluster_diffs.size < 2 or np.ptp(cluster_diffs) == 0:
        return None
    effect = min_detectable_effect(cluster_diffs.size)
    return None if effect is None else effect * float(np.std(cluster_diffs, ddof=1))


def _score_test(cluster_diffs: np.ndarray, test: str) -> float | None:
    """Two-sided p-value of the paired test on the sessions' mean differences; None where the test is undefined."""
    from scipy.stats import ttest_1samp  # slow to import: on first use

    if test == "t":
        # No spread: the t statistic is 0/0 or infinite, not a number.
        if cluster_diffs.size < 2 or np.ptp(cluster_diffs) == 0:
            return None
        return float(ttest_1samp(cluster_diffs, 0.0).pvalue)
    # zero_method "wilcox" (scipy's default) drops zero differences; with none left there is nothing to rank.
    if not np.any(cluster_diffs != 0):
        return None
    return signed_rank_p(cluster_diffs)


# Up to this many differences with ties or zeros, scipy's wilcoxon runs an exact permutation test (2**n sign flips).
EXACT_PERMUTATION_MAX_N = 13


def signed_rank_p(diffs: np.ndarray) -> float:
    """Two-sided p-value of the Wilcoxon signed-rank test of `diffs` (zeros dropped): scipy.stats.wilcoxon's, bit
    for bit. Where scipy runs its exact permutation test (at most 13 differences, with ties or zeros) the 2**n sign
    flips are counted here with one matrix product, where scipy computes the statistic once per flip (8,192 times
    for 13 differences). The rank sums are sums of half-integers, exact in floating point, so the counts are
    scipy's."""
    from scipy.stats import rankdata, wilcoxon  # slow to import: on first use

    nonzero = diffs[diffs != 0]
    ranks = rankdata(np.abs(nonzero))  # average ranks of ties, as scipy's test
    tied_or_zero = nonzero.size < diffs.size or np.unique(ranks).size < ranks.size
    if diffs.size > EXACT_PERMUTATION_MAX_N or not tied_or_zero:
        return float(wilcoxon(diffs, zero_method="wilcox").pvalue)
    observed = ranks[nonzero > 0].sum()
    # every sign pattern of the non-zero differences (a zero's flip changes nothing: each pattern counts 2**zeros
    # times in scipy's enumeration, which scales both counts and their total alike)
    positive = (np.arange(2 ** nonzero.size)[:, None] >> np.arange(nonzero.size)) & 1
    null = positive @ ranks
    smaller = min(np.count_nonzero(null <= observed), np.count_nonzero(null >= observed))
    return min(float(smaller) / null.size * 2, 1.0)


def _common(pairs: _Pairs, n_boot: int, seed: int, level: float) -> tuple:
    """baseline figure, other figure, diff, CI, the sessions' mean differences, and their MDD."""
    if pairs.baseline.size == 0:
        return None, None, None, None, np.empty(0), None
    cluster_diffs = (np.bincount(pairs.codes, weights=pairs.other - pairs.baseline, minlength=pairs.n_clusters)
                     / np.bincount(pairs.codes, minlength=pairs.n_clusters))
    diff = mean_of_strata(pairs.other - pairs.baseline, pairs.strata, pairs.n_strata)
    return (mean_of_strata(pairs.baseline, pairs.strata, pairs.n_strata),
            mean_of_strata(pairs.other, pairs.strata, pairs.n_strata), diff,
            cluster_bootstrap_ci(pairs, n_boot, seed, level), cluster_diffs, _mdd(cluster_diffs))


def paired_scores(baseline: Sequence, other: Sequence, clusters: Sequence[Hashable], n_boot: int = DEFAULT_N_BOOT,
                  seed: int = 0, level: float = DEFAULT_LEVEL, test: str = "wilcoxon",
                  strata: Sequence[Hashable] | None = None) -> PairedScores:
    """Other minus baseline on the shared samples of a score: means (over `strata` first when given), CI over
    sessions, paired test, MDD."""
    if test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}, got {test!r}")
    pairs = _pairs(baseline, other, clusters, strata)
    base, value, diff, ci, cluster_diffs, mdd = _common(pairs, n_boot, seed, level)
    p_value = _score_test(cluster_diffs, test) if cluster_diffs.size else None
    return PairedScores(base, value, diff, ci, p_value, test, int(pairs.baseline.size), pairs.n_clusters, mdd)


def mcnemar_exact(gained: int, lost: int) -> float | None:
    """McNemar's exact two-sided p-value from the discordant pair counts; None when there is none."""
    if gained + lost == 0:
        return None
    from scipy.stats import binom

    return float(min(1.0, 2.0 * binom.cdf(min(gained, lost), gained + lost, 0.5)))


def paired_verdicts(baseline: Sequence, other: Sequence, clusters: Sequence[Hashable], n_boot: int = DEFAULT_N_BOOT,
                    seed: int = 0, level: float = DEFAULT_LEVEL,
                    strata: Sequence[Hashable] | None = None) -> PairedVerdicts:
    """Other minus baseline on the shared samples of a 0/1 verdict: rates (over `strata` first when given), CI over
    sessions, McNemar, MDD."""
    pairs = _pairs(baseline, other, clusters, strata)
    if not np.isin(pairs.baseline, (0.0, 1.0)).all() or not np.isin(pairs.other, (0.0, 1.0)).all():
        raise ValueError("verdicts must be 0 or 1 (or missing)")
    base, value, diff, ci, _, mdd = _common(pairs, n_boot, seed, level)
    gained = int(np.sum((pairs.baseline == 0) & (pairs.other == 1)))
    lost = int(np.sum((pairs.baseline == 1) & (pairs.other == 0)))
    return PairedVerdicts(base, value, diff, ci, mcnemar_exact(gained, lost), "mcnemar", int(pairs.baseline.size),
                          pairs.n_clusters, mdd, gained, lost)


def adjust(p_values: Sequence[float | None], method: str) -> list[float | None]:
    """Holm ("holm") or Benjamini-Hochberg ("bh") adjusted p-values in input order; None stays None."""
    if method not in CORRECTIONS:
        raise ValueError(f"method must be one of {tuple(CORRECTIONS)}, got {method!r}")
    return CORRECTIONS[method](p_values)


def with_adjusted(rows: Sequence[dict]) -> list[dict]:
    """Copies of rows with "p_holm" and "p_bh": their "p_value"s adjusted as one family."""
    p_values = [row["p_value"] for row in rows]
    return [{**row, "p_holm": h, "p_bh": b} for row, h, b in zip(rows, holm(p_values), benjamini_hochberg(p_values))]


class WeightedStrata(NamedTuple):
    """A difference that is a weighted sum of strata's mean paired differences (AgentBench's OA over tasks)."""

    diff: float
    ci95: list[float] | None  # percentile interval resampling pairs within each stratum
    p_value: float | None  # two-sided z test on diff / se; None without a spread
    se: float | None  # sqrt(sum c^2 s^2 / n): None when a stratum has fewer than 2 pairs, or no spread
    mdd: float | None  # (z_{1-alpha/2} + z_{power}) * se


def weighted_strata(diffs: Sequence[Sequence[float]], coefficients: Sequence[float], n_boot: int = DEFAULT_N_BOOT,
                    seed: int = 0, level: float = DEFAULT_LEVEL) -> WeightedStrata:
    """sum_t c_t * mean(d_t) over strata of paired differences: stratified bootstrap CI, z test and MDD."""
    from scipy.stats import norm

    arrays = [np.asarray(d, dtype=float) for d in diffs]
    if not arrays or any(a.size == 0 for a in arrays) or len(arrays) != len(coefficients):
        raise ValueError("every stratum needs at least one pair, and one coefficient")
    diff = float(sum(c * a.mean() for c, a in zip(coefficients, arrays)))
    boot = np.zeros(n_boot)
    for t, (c, a) in enumerate(zip(coefficients, arrays)):
        # each stratum its own draws (seed + t), so strata are resampled independently
        boot += c * resampled_sums(resample_weights(a.size, n_boot, seed + t), a) / a.size
    ci = percentile_interval(boot, level) if any(a.size > 1 for a in arrays) else None
    se = None
    if all(a.size > 1 for a in arrays):
        se = math.sqrt(sum(c * c * float(np.var(a, ddof=1)) / a.size for c, a in zip(coefficients, arrays)))
    if not se:
        return WeightedStrata(diff, ci, None, None, None)
    p_value = float(2.0 * norm.sf(abs(diff) / se))
    return WeightedStrata(diff, ci, p_value, se, float((norm.isf(ALPHA / 2.0) + norm.ppf(POWER)) * se))
