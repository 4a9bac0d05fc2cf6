"""Unit tests for kinds.agreement against published values, hand computations and independent references."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats

from kinds import agreement as ag
from kinds.agreement import (
    bootstrap_agreement,
    bootstrap_alpha,
    bootstrap_kappa,
    bootstrap_kendall,
    bootstrap_method_tau,
    bootstrap_pearson,
    bootstrap_spearman,
    cohen_kappa,
    kendall_tau,
    krippendorff_alpha,
    pearson,
    spearman,
)

NAN = float("nan")

# Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg School for Communication,
# University of Pennsylvania. Section "C. Nominal data, any number of observers, missing values": 4 observers
# (rows here are observers as printed in the paper) x 12 units, "." = missing. Published: nominal alpha =
# 0.743, interval alpha = 0.849.
KRIPPENDORFF_2011_C = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],  # observer A
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],  # observer B
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],  # observer C
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],  # observer D
]
UNITS_BY_RATERS = np.array(KRIPPENDORFF_2011_C).T  # the module takes rows = units, columns = raters


# --- Krippendorff's alpha ------------------------------------------------------------------------


def reference_alpha(matrix, level: str) -> float | None:
    """Straightforward coincidence-matrix alpha (Krippendorff 2011): o_ck built pair by pair, then D_o / D_e."""
    units = [[v for v in row if v is not None and v == v] for row in matrix]
    units = [u for u in units if len(u) >= 2]
    labels = sorted({v for u in units for v in u})
    index = {v: i for i, v in enumerate(labels)}
    o = np.zeros((len(labels), len(labels)))
    for u in units:
        for i, j in itertools.permutations(range(len(u)), 2):
            o[index[u[i]], index[u[j]]] += 1.0 / (len(u) - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if n < 2:
        return None

    def delta(c, k):
        return float(c != k) if level == "nominal" else (c - k) ** 2

    d_o = sum(o[i, j] * delta(c, k) for (i, c), (j, k) in itertools.product(enumerate(labels), repeat=2)) / n
    d_e = sum(n_c[i] * n_c[j] * delta(c, k)
              for (i, c), (j, k) in itertools.product(enumerate(labels), repeat=2)) / (n * (n - 1))
    return None if d_e == 0 else 1.0 - d_o / d_e


def test_alpha_krippendorff_2011_nominal_published_value():
    assert ag.krippendorff_alpha(UNITS_BY_RATERS, "nominal") == pytest.approx(0.743, abs=5e-4)


def test_alpha_krippendorff_2011_interval_published_value():
    assert ag.krippendorff_alpha(UNITS_BY_RATERS, "interval") == pytest.approx(0.849, abs=5e-4)


def test_alpha_krippendorff_2011_matches_coincidence_matrix_reference():
    for level in ag.LEVELS:
        expected = reference_alpha(UNITS_BY_RATERS.tolist(), level)
        assert ag.krippendorff_alpha(UNITS_BY_RATERS, level) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("level", ag.LEVELS)
def test_alpha_perfect_agreement_is_one(level):
    ratings = [[10, 10, 10], [55, 55, None], [80, 80, 80], [0, None, 0]]
    assert ag.krippendorff_alpha(ratings, level) == 1.0


def test_alpha_tiny_case_by_hand():
    # Units (rows) x 2 raters; the third unit has one value, so it is not pairable and drops out.
    # Pairable values: 1, 2, 3, 3 -> n = 4.
    # Interval: D_o = (1/n) sum_u sum_{ordered pairs} (c - k)^2 / (m_u - 1)
    #   unit 1: (1,2) and (2,1) -> 1 + 1 = 2, / (2 - 1) = 2; unit 2: 0.  D_o = 2 / 4 = 0.5.
    #   D_e = sum over ordered pairs of distinct values (c - k)^2 / (n (n - 1)):
    #   unordered pairs of {1, 2, 3, 3}: (1,2) 1, (1,3) 4, (1,3) 4, (2,3) 1, (2,3) 1, (3,3) 0 -> 11, ordered 22.
    #   D_e = 22 / 12 = 11/6.  alpha = 1 - 0.5 / (11/6) = 1 - 3/11 = 8/11.
    # Nominal: D_o = 2 / 4 = 0.5 as above (the two ordered pairs of unit 1 disagree).
    #   Label counts n_1 = 1, n_2 = 1, n_3 = 2: disagreeing ordered pairs n^2 - sum n_c^2 = 16 - 6 = 10.
    #   D_e = 10 / 12 = 5/6.  alpha = 1 - 0.5 / (5/6) = 1 - 3/5 = 0.4.
    ratings = [[1, 2], [3, 3], [2, None]]
    assert ag.krippendorff_alpha(ratings, "interval") == pytest.approx(8 / 11)
    assert ag.krippendorff_alpha(ratings, "nominal") == pytest.approx(0.4)


def test_alpha_nominal_accepts_string_labels():
    # The tiny case above with labels renamed: nominal alpha only looks at equality.
    assert ag.krippendorff_alpha([["a", "b"], ["c", "c"], ["b", None]], "nominal") == pytest.approx(0.4)


@pytest.mark.parametrize("level", ag.LEVELS)
def test_alpha_ignores_missing_values(level):
    base = ag.krippendorff_alpha(UNITS_BY_RATERS, level)
    # An extra rater who rated nothing, units nobody rated, and units with one rating add no pairable value.
    padded = np.column_stack([UNITS_BY_RATERS, np.full(12, np.nan)])
    padded = np.vstack([padded, np.full((2, 5), np.nan), [[7, NAN, NAN, NAN, NAN], [NAN, NAN, 9, NAN, NAN]]])
    assert ag.krippendorff_alpha(padded, level) == pytest.approx(base, rel=1e-12)
    # None and NaN both mean missing.
    as_none = [[None if np.isnan(v) else v for v in row] for row in UNITS_BY_RATERS]
    assert ag.krippendorff_alpha(as_none, level) == pytest.approx(base, rel=1e-12)


@pytest.mark.parametrize("level", ag.LEVELS)
def test_alpha_matches_reference_on_random_data_with_missing(level):
    rng = np.random.default_rng(7)
    truth = rng.integers(0, 6, size=60)
    ratings = np.clip(truth[:, None] + rng.integers(-1, 2, size=(60, 4)), 0, 5).astype(float)
    ratings[rng.random(ratings.shape) < 0.3] = np.nan
    expected = reference_alpha(ratings.tolist(), level)
    assert ag.krippendorff_alpha(ratings, level) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("level", ag.LEVELS)
def test_alpha_undefined_cases_are_none(level):
    assert ag.krippendorff_alpha(np.empty((0, 3)), level) is None
    assert ag.krippendorff_alpha([[1, None], [None, 2], [3, None]], level) is None  # no unit has 2 values
    assert ag.krippendorff_alpha([[4, 4], [4, 4], [4, None]], level) is None  # one value only: D_e = 0


def test_alpha_rejects_bad_input():
    with pytest.raises(ValueError):
        ag.krippendorff_alpha([[1, 2]], "ordinal")
    with pytest.raises(ValueError):
        ag.krippendorff_alpha([1, 2, 3], "interval")


# --- Cohen's kappa -------------------------------------------------------------------------------


def reference_kappa(a, b) -> float | None:
    """Cohen's kappa from a confusion matrix, written out plainly."""
    labels = sorted(set(a) | set(b))
    confusion = np.zeros((len(labels), len(labels)))
    for x, y in zip(a, b):
        confusion[labels.index(x), labels.index(y)] += 1
    n = confusion.sum()
    p_o = np.trace(confusion) / n
    p_e = sum(confusion[i, :].sum() / n * confusion[:, i].sum() / n for i in range(len(labels)))
    return None if p_e == 1 else (p_o - p_e) / (1 - p_e)


def test_kappa_two_by_two_by_hand():
    # Table (rater a rows, rater b columns): yes/yes 20, yes/no 5, no/yes 10, no/no 15; n = 50.
    # p_o = (20 + 15) / 50 = 0.7.  a says yes 25/50 = 0.5, b says yes 30/50 = 0.6.
    # p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5.  kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    a = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 15
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert ag.cohen_kappa(a, b) == pytest.approx(0.4)


def test_kappa_drops_pairs_with_a_missing_side():
    a = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 15 + [None, 1, NAN]
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15 + [0, NAN, 1]
    assert ag.cohen_kappa(a, b) == pytest.approx(0.4)


def test_kappa_matches_reference_on_random_labels():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, size=300)
    b = np.where(rng.random(300) < 0.6, a, rng.integers(0, 4, size=300))
    expected = reference_kappa(a.tolist(), b.tolist())
    assert ag.cohen_kappa(a, b) == pytest.approx(expected, rel=1e-12)
    # ... and with the project's existing two-rater agreement summary.
    assert ag.cohen_kappa(a, b) == pytest.approx(ag.label_agreement(a.tolist(), b.tolist())["kappa"], rel=1e-12)


def test_kappa_undefined_cases_are_none():
    assert ag.cohen_kappa([], []) is None
    assert ag.cohen_kappa([1, None], [None, 0]) is None  # no item rated by both
    assert ag.cohen_kappa([1, 1, 1], [1, 1, 1]) is None  # p_e = 1


# --- rank correlations ---------------------------------------------------------------------------


def test_rank_correlations_match_scipy():
    rng = np.random.default_rng(11)
    a = rng.integers(0, 101, size=80).astype(float)
    b = a + rng.normal(0, 30, size=80).round()
    assert ag.spearman(a, b) == pytest.approx(scipy.stats.spearmanr(a, b).statistic, rel=1e-12)
    assert ag.kendall_tau(a, b) == pytest.approx(scipy.stats.kendalltau(a, b).statistic, rel=1e-12)
    assert ag.pearson(a, b) == pytest.approx(scipy.stats.pearsonr(a, b).statistic, rel=1e-12)


def test_rank_correlations_use_items_both_rated():
    a = [1, 2, 3, 4, None, 6, NAN]
    b = [2, 1, 4, 3, 5, None, 9]
    assert ag.spearman(a, b) == pytest.approx(scipy.stats.spearmanr([1, 2, 3, 4], [2, 1, 4, 3]).statistic)
    assert ag.kendall_tau(a, b) == pytest.approx(scipy.stats.kendalltau([1, 2, 3, 4], [2, 1, 4, 3]).statistic)
    # Pearson by hand on (1, 2), (2, 1), (3, 4), (4, 3): deviations -1.5, -0.5, 0.5, 1.5 and -0.5, -1.5, 1.5, 0.5;
    # products 0.75 + 0.75 + 0.75 + 0.75 = 3, sums of squares 5 and 5: r = 3 / 5.
    assert ag.pearson(a, b) == pytest.approx(0.6)


@pytest.mark.parametrize("func", [ag.spearman, ag.kendall_tau, ag.pearson])
def test_rank_correlations_undefined_cases_are_none(func):
    assert func([5, 5, 5, 5], [1, 2, 3, 4]) is None  # constant side
    assert func([1, 2, 3, 4], [7, 7, 7, 7]) is None
    assert func([1, 2], [2, 1]) is None  # fewer than 3 pairs
    assert func([1, 2, 3, None], [1, None, 3, 4]) is None  # only 2 pairs rated by both


# --- cluster bootstrap ---------------------------------------------------------------------------


def clustered_scores(n_clusters: int, per_cluster: int, seed: int):
    """Two judges' scores on per_cluster items in each of n_clusters sessions, correlated but noisy."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(50, 15, size=n_clusters * per_cluster)
    a = truth + rng.normal(0, 10, size=truth.size)
    b = truth + rng.normal(0, 10, size=truth.size)
    clusters = np.repeat(np.arange(n_clusters), per_cluster)
    return a, b, clusters


def test_bootstrap_interval_contains_point_estimate():
    a, b, clusters = clustered_scores(40, 5, seed=1)
    result = ag.bootstrap_agreement(ag.spearman, [a, b], clusters, n_boot=400, seed=0)
    assert result["value"] == pytest.approx(scipy.stats.spearmanr(a, b).statistic)
    assert result["n"] == 200
    assert result["low"] < result["value"] < result["high"]


def test_bootstrap_alpha_through_column_stack():
    a, b, clusters = clustered_scores(40, 5, seed=2)

    def alpha(*cols):
        return ag.krippendorff_alpha(np.column_stack(cols), "interval")

    c = a.copy()
    c[::3] = np.nan  # a third judge who skipped every third item
    result = ag.bootstrap_agreement(alpha, [a, b, c], clusters, n_boot=300, seed=0)
    assert result["value"] == pytest.approx(reference_alpha(np.column_stack([a, b, c]).tolist(), "interval"))
    assert result["n"] == 200
    assert result["low"] < result["value"] < result["high"]


def test_bootstrap_is_deterministic_for_a_seed():
    a, b, clusters = clustered_scores(30, 4, seed=3)
    first = ag.bootstrap_agreement(ag.kendall_tau, [a, b], clusters, n_boot=200, seed=5)
    again = ag.bootstrap_agreement(ag.kendall_tau, [a, b], clusters, n_boot=200, seed=5)
    other = ag.bootstrap_agreement(ag.kendall_tau, [a, b], clusters, n_boot=200, seed=6)
    assert first == again
    assert (first["low"], first["high"]) != (other["low"], other["high"])


def test_bootstrap_narrows_with_more_clusters():
    def width(result):
        return result["high"] - result["low"]

    a, b, clusters = clustered_scores(15, 4, seed=4)
    few = ag.bootstrap_agreement(ag.spearman, [a, b], clusters, n_boot=400, seed=0)
    a, b, clusters = clustered_scores(400, 4, seed=4)
    many = ag.bootstrap_agreement(ag.spearman, [a, b], clusters, n_boot=400, seed=0)
    # Width shrinks roughly as 1 / sqrt(clusters): sqrt(400 / 15) ~ 5; ask for a factor of 2.
    assert width(many) * 2 < width(few)


def test_bootstrap_resamples_clusters_not_items():
    # 20 sessions of 10 identical items each: the data hold only 20 independent observations. An item-level
    # bootstrap treats them as 200 and gives a far narrower interval (about sqrt(10) times).
    rng = np.random.default_rng(8)
    session_a = rng.normal(50, 15, size=20)
    session_b = session_a + rng.normal(0, 12, size=20)
    a, b = np.repeat(session_a, 10), np.repeat(session_b, 10)
    clusters = np.repeat([f"session-{i}" for i in range(20)], 10)
    cluster_result = ag.bootstrap_agreement(ag.spearman, [a, b], clusters, n_boot=500, seed=0)

    # Item-level bootstrap, written out independently: draw 200 items with replacement.
    draws = np.random.default_rng(0).integers(0, a.size, size=(500, a.size))
    item_stats = [scipy.stats.spearmanr(a[idx], b[idx]).statistic for idx in draws]
    item_low, item_high = np.percentile(item_stats, [2.5, 97.5])

    assert cluster_result["high"] - cluster_result["low"] > 2 * (item_high - item_low)


def test_bootstrap_skips_undefined_replicates():
    # Two clusters; on the first, rater b is constant. A replicate that draws it twice has spearman None
    # (about a quarter), one that draws the second twice repeats (4, 5, 6) vs (1, 2, 4): rho = 1 (a quarter),
    # and one that draws both has the full data (half). Skipping the None ones leaves [full, 1].
    a = [1, 2, 3, 4, 5, 6]
    b = [3, 3, 3, 1, 2, 4]
    result = ag.bootstrap_agreement(ag.spearman, [a, b], [0, 0, 0, 1, 1, 1], n_boot=200, seed=0)
    full = scipy.stats.spearmanr(a, b).statistic
    assert full < 1
    assert result == {"value": pytest.approx(full), "low": pytest.approx(full), "high": pytest.approx(1.0), "n": 6}


def test_bootstrap_gives_up_when_most_replicates_are_undefined():
    # Ten clusters, but rater b rated only the items of clusters 0 (b = 1) and 1 (b = 2): spearman needs both
    # drawn, which happens with probability 1 - 2 * 0.9^10 + 0.8^10 = 0.41 < 1/2.
    a = list(range(20))
    b = [1, 1, 2, 2] + [None] * 16
    clusters = np.repeat(np.arange(10), 2)
    result = ag.bootstrap_agreement(ag.spearman, [a, b], clusters, n_boot=200, seed=0)
    assert result["value"] == pytest.approx(scipy.stats.spearmanr([0, 1, 2, 3], [1, 1, 2, 2]).statistic)
    assert result["n"] == 4
    assert result["low"] is None and result["high"] is None


def test_bootstrap_degenerate_inputs():
    # One cluster: nothing to resample.
    one = ag.bootstrap_agreement(ag.cohen_kappa, [[1, 0, 1, 0], [1, 0, 0, 0]], ["s"] * 4)
    assert one["value"] == pytest.approx(reference_kappa([1, 0, 1, 0], [1, 0, 0, 0]))
    assert one["low"] is None and one["high"] is None and one["n"] == 4
    # Undefined point estimate: no interval either.
    flat = ag.bootstrap_agreement(ag.cohen_kappa, [[1, 1, 1], [1, 1, None]], [0, 1, 2])
    assert flat == {"value": None, "low": None, "high": None, "n": 2}
    with pytest.raises(ValueError):
        ag.bootstrap_agreement(ag.cohen_kappa, [[1, 0], [1]], [0, 1])


# --- the vectorised bootstraps give bootstrap_agreement's numbers --------------------------------

def _pair(test):
    """A two-rater statistic over the items both rated, as bootstrap_agreement calls it."""
    def stat(a, b):
        both = ~np.isnan(a) & ~np.isnan(b)
        return test(a[both].tolist(), b[both].tolist())
    return stat


def _close(fast: dict, slow: dict) -> None:
    assert fast["n"] == slow["n"]
    for key in ("value", "low", "high"):
        assert (fast[key] is None) == (slow[key] is None), (key, fast, slow)
        if slow[key] is not None:
            assert fast[key] == pytest.approx(slow[key], rel=1e-9, abs=1e-12), (key, fast, slow)


@pytest.mark.parametrize("seed, labels, raters, missing, n_clusters", [
    (1, None, 3, 0.2, 30), (2, None, 2, 0.0, 5), (3, 2, 3, 0.3, 40), (4, 3, 2, 0.1, 3), (5, None, 4, 0.5, 12),
])
def test_vectorised_bootstraps_match_the_generic_one(seed, labels, raters, missing, n_clusters):
    rng = np.random.default_rng(seed)
    shape = (150, raters)
    if labels:
        ratings = rng.integers(0, labels, size=shape).astype(float)
    else:  # scores with many ties and some halves, like panel means
        ratings = rng.integers(0, 21, size=shape) + rng.choice([0.0, 0.5], size=shape)
    ratings[rng.random(shape) < missing] = np.nan
    clusters = [f"s{c}" for c in rng.integers(0, n_clusters, shape[0])]
    level = "nominal" if labels else "interval"
    columns = [ratings[:, i] for i in range(raters)]
    _close(bootstrap_alpha(ratings, clusters, level, n_boot=300),
           bootstrap_agreement(lambda *c: krippendorff_alpha(np.column_stack(c), level), columns, clusters, n_boot=300))
    for fast, test in ((bootstrap_spearman, spearman), (bootstrap_kappa, cohen_kappa), (bootstrap_pearson, pearson),
                       (bootstrap_kendall, kendall_tau)):
        _close(fast(ratings[:, 0], ratings[:, 1], clusters, n_boot=300),
               bootstrap_agreement(_pair(test), columns[:2], clusters, n_boot=300))


def test_vectorised_bootstraps_when_undefined():
    constant = np.full((20, 2), 7.0)
    clusters = [i // 4 for i in range(20)]
    assert bootstrap_alpha(constant, clusters) == {"value": None, "low": None, "high": None, "n": 20}
    assert bootstrap_spearman(constant[:, 0], constant[:, 1], clusters)["value"] is None
    assert bootstrap_kappa(constant[:, 0], constant[:, 1], clusters)["value"] is None
    assert bootstrap_pearson(constant[:, 0], constant[:, 1], clusters)["value"] is None
    assert bootstrap_kendall(constant[:, 0], constant[:, 1], clusters)["value"] is None
    one_cluster = bootstrap_spearman([1, 2, 3, 4], [1, 3, 2, 4], [0, 0, 0, 0])
    assert one_cluster["value"] == pytest.approx(0.8) and one_cluster["low"] is None
    # A replicate drawing only flat units has no alpha: skipped, as bootstrap_agreement skips it.
    ratings = np.array([[1.0, 1.0]] * 6 + [[1.0, 2.0], [3.0, 1.0]])
    clusters = [0, 0, 1, 1, 2, 2, 3, 3]
    _close(bootstrap_alpha(ratings, clusters, n_boot=200),
           bootstrap_agreement(lambda *c: krippendorff_alpha(np.column_stack(c)), [ratings[:, 0], ratings[:, 1]],
                               clusters, n_boot=200))


def test_quadratic_kappa_matches_scikit_learn_and_its_bootstrap_the_generic_one():
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(7)
    a = rng.integers(1, 6, 120).astype(float)
    b = np.clip(a + rng.integers(-1, 2, 120), 1, 5)
    b[rng.random(120) < 0.1] = np.nan
    both = ~np.isnan(b)
    values = (1, 2, 3, 4, 5)
    assert ag.quadratic_kappa(a, b, values) == pytest.approx(
        cohen_kappa_score(a[both], b[both], weights="quadratic", labels=list(values)))
    clusters = [f"s{c}" for c in rng.integers(0, 25, 120)]
    _close(ag.bootstrap_quadratic_kappa(a, b, values, clusters, n_boot=300),
           bootstrap_agreement(_pair(lambda x, y: ag.quadratic_kappa(x, y, values)), [a, b], clusters, n_boot=300))
    assert ag.quadratic_kappa([3, 3], [3, 3], values) is None  # no disagreement by chance: undefined
    with pytest.raises(ValueError, match="not one of the ordered values"):
        ag.quadratic_kappa([1, 6], [1, 2], values)


@pytest.mark.parametrize("fast, test", [(bootstrap_pearson, pearson), (bootstrap_kendall, kendall_tau)])
def test_pearson_and_kendall_bootstraps_skip_replicates_as_the_generic_one(fast, test):
    # The case of test_bootstrap_skips_undefined_replicates: a replicate drawing the first cluster twice has a
    # constant side; the generic bootstrap skips it, and so must the vectorised one.
    a, b, clusters = [1, 2, 3, 4, 5, 6], [3, 3, 3, 1, 2, 4], [0, 0, 0, 1, 1, 1]
    _close(fast(a, b, clusters, n_boot=200), bootstrap_agreement(_pair(test), [np.array(a, float), np.array(b, float)],
                                                                 clusters, n_boot=200))


def test_alpha_equals_the_krippendorff_package():
    krippendorff = pytest.importorskip("krippendorff")  # requirements-dev.txt pins it
    rng = np.random.default_rng(21)
    for level in ag.LEVELS:
        truth = rng.integers(0, 6, size=50)
        ratings = np.clip(truth[:, None] + rng.integers(-1, 2, size=(50, 3)), 0, 5).astype(float)
        ratings[rng.random(ratings.shape) < 0.25] = np.nan
        # the package takes raters x units
        expected = krippendorff.alpha(reliability_data=ratings.T, level_of_measurement=level)
        assert ag.krippendorff_alpha(ratings, level) == pytest.approx(expected, rel=1e-9)
    expected = krippendorff.alpha(reliability_data=np.array(KRIPPENDORFF_2011_C), level_of_measurement="interval")
    assert bootstrap_alpha(UNITS_BY_RATERS, list(range(12)), n_boot=50)["value"] == pytest.approx(expected, rel=1e-9)


def _methods_tau(methods):
    """Kendall's tau of the methods' mean ratings by two raters, as bootstrap_agreement calls it."""
    def stat(a, b, method):
        both = ~np.isnan(a) & ~np.isnan(b)
        labels = sorted(set(method[both].tolist()))
        means = [[np.mean(v[both & (method == m)]) for m in labels] for v in (a, b)]
        return kendall_tau(*means)
    return stat


@pytest.mark.parametrize("seed, n_methods, n_clusters", [(31, 4, 30), (32, 3, 8), (33, 6, 50)])
def test_method_tau_bootstrap_matches_the_generic_one(seed, n_methods, n_clusters):
    rng = np.random.default_rng(seed)
    items = 240
    method = rng.integers(0, n_methods, items)
    quality = method * 3.0 + rng.normal(0, 8, items)  # methods apart by 3 points, replies spread by 8
    a = quality + rng.normal(0, 4, items)
    b = quality + rng.normal(0, 4, items)
    b[rng.random(items) < 0.2] = np.nan
    clusters = [f"s{c}" for c in rng.integers(0, n_clusters, items)]
    names = np.array([f"method-{m}" for m in method], dtype=object)
    fast = bootstrap_method_tau(a, b, names, clusters, n_boot=300)
    slow = bootstrap_agreement(_methods_tau(method), [a, b, method.astype(float)], clusters, n_boot=300)
    assert fast["n"] == int(np.sum(~np.isnan(b)))
    for key in ("value", "low", "high"):
        assert fast[key] == pytest.approx(slow[key], rel=1e-12), key


def test_method_tau_by_hand():
    # Three methods; rater a's means 1, 2, 3, rater b's 2, 1, 3: pairs (1,2) discordant, (1,3) and (2,3)
    # concordant: tau = (2 - 1) / 3.
    a = [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
    b = [2.0, 2.0, 1.0, 1.0, 3.0, 3.0]
    result = bootstrap_method_tau(a, b, ["x", "x", "y", "y", "z", "z"], [0, 1, 2, 3, 4, 5], n_boot=100)
    assert result["value"] == pytest.approx(1 / 3) and result["n"] == 6
    assert bootstrap_method_tau(a[:4], b[:4], ["x", "x", "y", "y"], [0, 1, 2, 3])["value"] is None  # 2 methods
    with pytest.raises(ValueError, match="method of each item"):
        bootstrap_method_tau(a, b, ["x"], [0, 1, 2, 3, 4, 5])
