"""Unit tests for kinds.comparisons against hand-computed values and independent references."""

import itertools
import math

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as sp_stats

from kinds import comparisons as cmp
from kinds.stats import resample_indices

# --- holm --------------------------------------------------------------------------------------


def test_holm_by_hand_with_monotonicity():
    # m = 4. Sorted: 0.005 (pos 3) x4 = 0.02; 0.01 (pos 0) x3 = 0.03; 0.03 (pos 2) x2 = 0.06;
    # 0.04 (pos 1) x1 = 0.04, raised to the running maximum 0.06. Input order: 0.03, 0.06, 0.06, 0.02.
    assert cmp.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_caps_at_one():
    # m = 3. Sorted: 0.2 x3 = 0.6; 0.5 x2 = 1.0; 0.9 x1 = 0.9 -> running maximum 1.0.
    assert cmp.holm([0.5, 0.2, 0.9]) == pytest.approx([1.0, 0.6, 1.0])
    # m = 2. 0.6 x2 = 1.2 capped to 1.0; 0.7 x1 = 0.7 -> running maximum 1.0.
    assert cmp.holm([0.6, 0.7]) == [1.0, 1.0]


def test_holm_equal_p_values():
    # m = 2. 0.02 x2 = 0.04; 0.02 x1 = 0.02 -> 0.04, whichever of the two is taken first.
    assert cmp.holm([0.02, 0.02]) == pytest.approx([0.04, 0.04])


def test_holm_none_entries_stay_none_and_do_not_count():
    # Only two p-values, so m = 2: 0.01 x2 = 0.02; 0.04 x1 = 0.04.
    assert cmp.holm([None, 0.01, None, 0.04]) == pytest.approx([None, 0.02, None, 0.04])
    assert cmp.holm([None, None]) == [None, None]
    assert cmp.holm([]) == []
    assert cmp.holm([0.3]) == [0.3]  # m = 1: unchanged


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan])
def test_holm_rejects_invalid_p_values(bad):
    with pytest.raises(ValueError):
        cmp.holm([0.01, bad])


def test_significant_after_holm_by_hand():
    # Step-down by hand at alpha 0.05: 0.005 <= 0.05/4; 0.01 <= 0.05/3; 0.03 > 0.05/2 -> stop.
    assert cmp.significant_after_holm([0.01, 0.04, 0.03, 0.005]) == [True, False, False, True]
    assert cmp.significant_after_holm([None, 0.01, 0.2], alpha=0.05) == [None, True, False]


def _holm_step_down_rejections(p, alpha):
    """Holm's procedure as usually stated: walk the sorted p-values, reject while p_(k) <= alpha / (m - k)."""
    rejected = set()
    order = sorted(range(len(p)), key=lambda i: p[i])
    for k, i in enumerate(order):
        if p[i] > alpha / (len(p) - k):
            break
        rejected.add(i)
    return rejected


def test_holm_adjusted_values_agree_with_step_down_procedure():
    rng = np.random.default_rng(7)
    for _ in range(50):
        p = list(rng.uniform(0, 0.1, size=rng.integers(1, 9)))
        adjusted = cmp.holm(p)
        for alpha in (0.01, 0.025, 0.05, 0.1):
            assert {i for i, a in enumerate(adjusted) if a <= alpha} == _holm_step_down_rejections(p, alpha)


# --- pair_outcome / position_consistent --------------------------------------------------------

# (verdict with A shown first, verdict with B shown first) -> (outcome for A, position consistent).
# With A first, "first" means A; with B first, "first" means B.
VERDICT_TABLE = {
    ("first", "first"): ("tie", False),    # A, then B: the verdict follows the position
    ("first", "second"): ("A", True),      # A, then A
    ("first", "tie"): ("tie", False),      # A, then tie
    ("second", "first"): ("B", True),      # B, then B
    ("second", "second"): ("tie", False),  # B, then A: the verdict follows the position
    ("second", "tie"): ("tie", False),     # B, then tie
    ("tie", "first"): ("tie", False),      # tie, then B
    ("tie", "second"): ("tie", False),     # tie, then A
    ("tie", "tie"): ("tie", True),         # tie, then tie
}


@pytest.mark.parametrize("first_order, swapped_order", list(VERDICT_TABLE))
def test_pair_outcome_and_consistency_table(first_order, swapped_order):
    outcome, consistent = VERDICT_TABLE[(first_order, swapped_order)]
    assert cmp.pair_outcome(first_order, swapped_order) == outcome
    assert cmp.position_consistent(first_order, swapped_order) is consistent


def test_verdict_table_covers_all_nine_combinations():
    assert set(VERDICT_TABLE) == set(itertools.product(["first", "second", "tie"], repeat=2))


@pytest.mark.parametrize("verdicts", [("A", "tie"), ("first", "B"), ("First", "tie"), (None, "tie")])
def test_unknown_verdicts_are_rejected(verdicts):
    with pytest.raises(ValueError):
        cmp.pair_outcome(*verdicts)
    with pytest.raises(ValueError):
        cmp.position_consistent(*verdicts)


# --- win_rates ---------------------------------------------------------------------------------

OUTCOMES = ["A", "A", "tie", "B", "A", "B", "A", "tie", "A", "A"]
SESSIONS = ["s1", "s1", "s2", "s2", "s3", "s3", "s3", "s4", "s5", "s5"]


def test_win_rates_equal_hand_counts():
    # 10 outcomes: A x6, tie x2, B x2.
    result = cmp.win_rates(OUTCOMES, SESSIONS, n_boot=200)
    assert result["win"]["rate"] == pytest.approx(0.6)
    assert result["tie"]["rate"] == pytest.approx(0.2)
    assert result["loss"]["rate"] == pytest.approx(0.2)
    assert result["n"] == 10
    assert result["clusters"] == 5


def test_win_rates_interval_is_deterministic_and_contains_estimate():
    first = cmp.win_rates(OUTCOMES, SESSIONS, n_boot=500, seed=3)
    again = cmp.win_rates(OUTCOMES, SESSIONS, n_boot=500, seed=3)
    other = cmp.win_rates(OUTCOMES, SESSIONS, n_boot=500, seed=4)
    assert first == again
    assert first["win"]["ci95"] != other["win"]["ci95"]
    for name in ("win", "tie", "loss"):
        lo, hi = first[name]["ci95"]
        assert 0.0 <= lo <= first[name]["rate"] <= hi <= 1.0


def test_win_rates_bootstrap_matches_independent_cluster_resampling():
    # Reference: draw the same cluster indices, then pool each resample's outcomes in a plain loop.
    n_boot, seed = 300, 11
    by_cluster = {}
    for outcome, session in zip(OUTCOMES, SESSIONS):
        by_cluster.setdefault(session, []).append(outcome)
    clusters = list(by_cluster.values())  # first-appearance order, unequal sizes (2, 2, 3, 1, 2)
    rates = {"A": [], "tie": [], "B": []}
    for draw in resample_indices(len(clusters), n_boot, seed):
        pooled = [o for c in draw for o in clusters[c]]
        for kind in rates:
            rates[kind].append(pooled.count(kind) / len(pooled))
    result = cmp.win_rates(OUTCOMES, SESSIONS, n_boot=n_boot, seed=seed, level=0.9)
    for name, kind in (("win", "A"), ("tie", "tie"), ("loss", "B")):
        assert result[name]["ci95"] == pytest.approx(list(np.percentile(rates[kind], [5, 95])))


def test_win_rates_resample_clusters_not_items():
    # Session x: 10 wins, session y: 10 losses. Drawing two whole sessions gives a win rate of 0, 0.5 or 1
    # with probabilities 1/4, 1/2, 1/4, so the 2.5% and 97.5% percentiles are exactly 0 and 1.
    outcomes = ["A"] * 10 + ["B"] * 10
    by_session = cmp.win_rates(outcomes, ["x"] * 10 + ["y"] * 10, n_boot=2000)
    assert by_session["win"]["ci95"] == [0.0, 1.0]
    # Resampling the 20 outcomes one by one would give a binomial spread: sd sqrt(0.25 / 20) ~ 0.11.
    by_item = cmp.win_rates(outcomes, n_boot=2000)
    lo, hi = by_item["win"]["ci95"]
    assert 0.2 < lo < 0.5 < hi < 0.8


def test_win_rates_edge_cases():
    empty = cmp.win_rates([], [])
    assert empty["win"] == {"rate": None, "ci95": None} and empty["n"] == 0
    one_session = cmp.win_rates(["A", "B", "A"], ["s", "s", "s"])
    assert one_session["win"] == {"rate": pytest.approx(2 / 3), "ci95": None}
    with pytest.raises(ValueError):
        cmp.win_rates(["A", "win"])
    with pytest.raises(ValueError):
        cmp.win_rates(["A", "B"], ["s"])


# --- bradley_terry -----------------------------------------------------------------------------


def test_bradley_terry_two_methods_ratio_is_wins_over_losses():
    # Two methods: the likelihood is q^W (1 - q)^L with q = p_a / (p_a + p_b), maximal at q = W / (W + L),
    # so p_a / p_b = W / L. W = 30, L = 10 -> 3, and with strengths summing to 1: 0.75 and 0.25.
    comparisons = [("a", "b", "A")] * 30 + [("a", "b", "B")] * 10
    fit = cmp.bradley_terry(comparisons, prior=0)
    assert fit.strengths["a"] / fit.strengths["b"] == pytest.approx(3.0, rel=1e-8)
    assert fit.strengths == pytest.approx({"a": 0.75, "b": 0.25}, abs=1e-9)
    assert fit.ranking == ["a", "b"]
    assert fit.converged


def test_bradley_terry_two_methods_ties_count_half():
    # a: 6 wins + 4 ties / 2 = 8; b: 2 wins (recorded with b as method_a) + 4 / 2 = 4 -> ratio 2.
    comparisons = [("a", "b", "A")] * 6 + [("b", "a", "A")] * 2 + [("a", "b", "tie")] * 4
    fit = cmp.bradley_terry(comparisons, prior=0)
    assert fit.strengths["a"] / fit.strengths["b"] == pytest.approx(2.0, rel=1e-8)


def test_bradley_terry_default_prior_is_one_virtual_tie_per_pair():
    # prior 1: one more tie between a and b, half a win each -> (30 + 0.5) / (10 + 0.5).
    comparisons = [("a", "b", "A")] * 30 + [("a", "b", "B")] * 10
    fit = cmp.bradley_terry(comparisons)
    assert fit.strengths["a"] / fit.strengths["b"] == pytest.approx(30.5 / 10.5, rel=1e-8)


def _reference_fit(names, comparisons, virtual_ties=0.0):
    """Maximise the Bradley-Terry log-likelihood over log-strengths with scipy; ties are half wins."""
    k = len(names)
    index = {name: i for i, name in enumerate(names)}
    credit = np.full((k, k), virtual_ties / 2.0) - np.diag(np.full(k, virtual_ties / 2.0))
    for a, b, outcome in comparisons:
        i, j = index[a], index[b]
        share = {"A": 1.0, "B": 0.0, "tie": 0.5}[outcome]
        credit[i, j] += share
        credit[j, i] += 1.0 - share
    games = credit + credit.T

    def theta_of(free):
        return np.concatenate([[0.0], free])  # the scale is not identified: fix the first log-strength

    def negative_log_likelihood(free):
        theta = theta_of(free)
        diff = theta[:, None] - theta[None, :]
        # log P(i beats j) = theta_i - log(exp(theta_i) + exp(theta_j)) = -log(1 + exp(-(theta_i - theta_j)))
        return float(np.sum(credit * np.logaddexp(0.0, -diff)))

    def gradient(free):
        theta = theta_of(free)
        beat = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))
        grad = -(credit.sum(axis=1) - (games * beat).sum(axis=1))
        return grad[1:]

    result = optimize.minimize(negative_log_likelihood, np.zeros(k - 1), jac=gradient, method="BFGS",
                               options={"gtol": 1e-12, "maxiter": 10_000})
    strengths = np.exp(theta_of(result.x))
    return dict(zip(names, strengths / strengths.sum()))


FOUR_METHODS = ["w", "x", "y", "z"]
FOUR_COMPARISONS = (
    [("w", "x", "A")] * 7 + [("w", "x", "B")] * 3 + [("w", "x", "tie")] * 2
    + [("x", "y", "A")] * 5 + [("y", "x", "A")] * 4 + [("x", "y", "tie")] * 1
    + [("y", "z", "A")] * 6 + [("z", "y", "A")] * 2
    + [("w", "z", "A")] * 4 + [("z", "w", "A")] * 1 + [("z", "w", "tie")] * 3
    + [("x", "z", "B")] * 2 + [("x", "z", "A")] * 3
)


def test_bradley_terry_matches_direct_likelihood_maximisation():
    fit = cmp.bradley_terry(FOUR_COMPARISONS, FOUR_METHODS, prior=0)
    reference = _reference_fit(FOUR_METHODS, FOUR_COMPARISONS)
    assert fit.converged
    assert sum(fit.strengths.values()) == pytest.approx(1.0)
    for name in FOUR_METHODS:
        assert fit.strengths[name] == pytest.approx(reference[name], abs=1e-6)
    assert fit.ranking == sorted(FOUR_METHODS, key=lambda name: -reference[name])


def test_bradley_terry_prior_matches_likelihood_with_virtual_ties():
    fit = cmp.bradley_terry(FOUR_COMPARISONS, FOUR_METHODS, prior=2.0)
    reference = _reference_fit(FOUR_METHODS, FOUR_COMPARISONS, virtual_ties=2.0)
    for name in FOUR_METHODS:
        assert fit.strengths[name] == pytest.approx(reference[name], abs=1e-6)


def test_bradley_terry_recovers_order_of_simulated_strengths():
    true = {"m1": 8.0, "m2": 4.0, "m3": 2.0, "m4": 1.0}
    rng = np.random.default_rng(2024)
    comparisons = []
    for a, b in itertools.combinations(["m3", "m1", "m4", "m2"], 2):
        for _ in range(200):
            first, second = (a, b) if rng.random() < 0.5 else (b, a)
            wins = rng.random() < true[first] / (true[first] + true[second])
            comparisons.append((first, second, "A" if wins else "B"))
    fit = cmp.bradley_terry(comparisons, prior=0)
    assert fit.converged
    assert fit.ranking == ["m1", "m2", "m3", "m4"]
    # Each pair has 200 games, so the fitted ratios are near the true ones (loose check, not the point).
    assert fit.strengths["m1"] / fit.strengths["m4"] == pytest.approx(8.0, rel=0.35)


def test_bradley_terry_method_that_never_wins():
    comparisons = [("a", "b", "A")] * 10 + [("a", "c", "A")] * 3 + [("c", "a", "A")] * 3 + [("c", "b", "A")] * 5
    with pytest.raises(ValueError):
        cmp.bradley_terry(comparisons, prior=0)
    fit = cmp.bradley_terry(comparisons)
    assert all(s > 0 for s in fit.strengths.values())
    assert fit.ranking[-1] == "b"
    # Two methods, b never winning: with prior 1, a has 10 + 0.5 and b 0 + 0.5 -> ratio 21.
    two = cmp.bradley_terry([("a", "b", "A")] * 10)
    assert two.strengths["a"] / two.strengths["b"] == pytest.approx(21.0, rel=1e-8)


def test_bradley_terry_disconnected_graph():
    # a-b and c-d are never compared across; within each pair the first wins 3 of 4.
    comparisons = [("a", "b", "A")] * 3 + [("a", "b", "B")] + [("c", "d", "A")] * 3 + [("c", "d", "B")]
    with pytest.raises(ValueError):
        cmp.bradley_terry(comparisons, prior=0)
    fit = cmp.bradley_terry(comparisons)
    # The two groups are mirror images linked only by the virtual ties, so they get the same strengths.
    assert fit.strengths["a"] == pytest.approx(fit.strengths["c"], abs=1e-9)
    assert fit.strengths["b"] == pytest.approx(fit.strengths["d"], abs=1e-9)
    assert fit.strengths["a"] > fit.strengths["b"]
    # A listed method without any comparison is also disconnected.
    with pytest.raises(ValueError):
        cmp.bradley_terry([("a", "b", "A"), ("a", "b", "B")], ["a", "b", "c"], prior=0)


def test_bradley_terry_small_and_invalid_inputs():
    assert cmp.bradley_terry([]) == ({}, [], 0, True)
    assert cmp.bradley_terry([], ["only"]).strengths == {"only": 1.0}
    even = cmp.bradley_terry([], ["a", "b", "c"])  # only virtual ties: all equal
    assert even.strengths == pytest.approx({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3})
    assert even.ranking == ["a", "b", "c"]
    with pytest.raises(ValueError):
        cmp.bradley_terry([("a", "a", "A")])
    with pytest.raises(ValueError):
        cmp.bradley_terry([("a", "b", "win")])
    with pytest.raises(ValueError):
        cmp.bradley_terry([("a", "c", "A")], ["a", "b"])
    with pytest.raises(ValueError):
        cmp.bradley_terry([], prior=-1)


# --- length bias -------------------------------------------------------------------------------


def test_length_correlation_matches_scipy():
    rng = np.random.default_rng(5)
    lengths = rng.integers(50, 400, size=40).astype(float)
    lengths[:6] = 120.0  # ties in the ranks
    scores = np.round(40 + 0.05 * lengths + rng.normal(0, 8, size=40))  # rounded: ties in scores too
    result = cmp.length_correlation(list(scores), list(lengths))
    assert result["pearson"] == pytest.approx(sp_stats.pearsonr(scores, lengths)[0], abs=1e-12)
    assert result["spearman"] == pytest.approx(sp_stats.spearmanr(scores, lengths)[0], abs=1e-12)
    assert result["n"] == 40


def test_length_correlation_drops_missing_pairs_and_handles_undefined():
    scores = [1.0, None, 3.0, 2.0, 5.0]
    lengths = [10, 20, None, 30, 50]
    # Used pairs: (1, 10), (2, 30), (5, 50).
    result = cmp.length_correlation(scores, lengths)
    assert result["n"] == 3
    assert result["pearson"] == pytest.approx(sp_stats.pearsonr([1, 2, 5], [10, 30, 50])[0])
    assert result["spearman"] == pytest.approx(1.0)
    assert cmp.length_correlation([3, 3, 3], [1, 2, 3]) == {"pearson": None, "spearman": None, "n": 3}
    assert cmp.length_correlation([1], [2]) == {"pearson": None, "spearman": None, "n": 1}


def _design(rng, per_method=12):
    methods = ["A", "B", "C"] * per_method
    rng.shuffle(methods)
    lengths = rng.integers(80, 600, size=len(methods)).astype(float)
    # Longer replies for B: without controlling for length, B's raw difference would be inflated.
    lengths += np.array([150.0 if m == "B" else 0.0 for m in methods])
    return methods, lengths


def test_length_controlled_differences_exact_data():
    methods, lengths = _design(np.random.default_rng(1))
    scores = [50 + 5 * (m == "B") - 3 * (m == "C") + 0.1 * n for m, n in zip(methods, lengths)]
    result = cmp.length_controlled_differences(scores, lengths, methods, "A")
    assert result["differences"]["B"]["estimate"] == pytest.approx(5.0, abs=1e-9)
    assert result["differences"]["C"]["estimate"] == pytest.approx(-3.0, abs=1e-9)
    assert result["length_slope"]["estimate"] == pytest.approx(0.1, abs=1e-12)
    assert result["differences"]["B"]["se"] < 1e-9
    assert list(result["differences"]) == [m for m in dict.fromkeys(methods) if m != "A"]
    assert result["n"] == 36 and result["df"] == 32


def test_length_controlled_differences_match_normal_equations_and_ancova_formulas():
    rng = np.random.default_rng(9)
    methods, lengths = _design(rng)
    scores = np.array([50 + 5 * (m == "B") - 3 * (m == "C") + 0.1 * n for m, n in zip(methods, lengths)])
    scores += rng.normal(0, 6, size=scores.size)
    result = cmp.length_controlled_differences(list(scores), list(lengths), methods, "A")
    labels = np.array(methods)
    n, p = scores.size, 4

    # 1. Normal equations: (X'X) b = X'y, s^2 = RSS / (n - p), Var(b) = s^2 (X'X)^-1.
    X = np.column_stack([np.ones(n), labels == "B", labels == "C", lengths]).astype(float)
    xtx = X.T @ X
    b = np.linalg.solve(xtx, X.T @ scores)
    s2 = np.sum((scores - X @ b) ** 2) / (n - p)
    se = np.sqrt(s2 * np.diag(np.linalg.inv(xtx)))
    t_crit = sp_stats.t.ppf(0.975, n - p)
    for column, name in ((1, "B"), (2, "C")):
        got = result["differences"][name]
        assert got["estimate"] == pytest.approx(b[column], rel=1e-9)
        assert got["se"] == pytest.approx(se[column], rel=1e-9)
        assert got["ci95"] == pytest.approx([b[column] - t_crit * se[column], b[column] + t_crit * se[column]])
    assert result["length_slope"]["estimate"] == pytest.approx(b[3], rel=1e-9)
    assert result["length_slope"]["se"] == pytest.approx(se[3], rel=1e-9)

    # 2. The textbook one-way ANCOVA, step by step from group means (no matrix algebra):
    #    pooled within-group slope = S_xy / S_xx, adjusted difference = (ybar_m - ybar_A) - slope (xbar_m - xbar_A),
    #    Var(adjusted difference) = s^2 (1 / n_m + 1 / n_A + (xbar_m - xbar_A)^2 / S_xx).
    groups = {g: (scores[labels == g], lengths[labels == g]) for g in ("A", "B", "C")}
    s_xx = sum(np.sum((x - x.mean()) ** 2) for _, x in groups.values())
    s_xy = sum(np.sum((x - x.mean()) * (y - y.mean())) for y, x in groups.values())
    slope = s_xy / s_xx
    rss = sum(np.sum((y - y.mean() - slope * (x - x.mean())) ** 2) for y, x in groups.values())
    s2_ancova = rss / (n - p)
    assert result["length_slope"]["estimate"] == pytest.approx(slope, rel=1e-9)
    assert result["length_slope"]["se"] == pytest.approx(math.sqrt(s2_ancova / s_xx), rel=1e-9)
    y_a, x_a = groups["A"]
    for name in ("B", "C"):
        y_m, x_m = groups[name]
        diff = (y_m.mean() - y_a.mean()) - slope * (x_m.mean() - x_a.mean())
        var = s2_ancova * (1 / y_m.size + 1 / y_a.size + (x_m.mean() - x_a.mean()) ** 2 / s_xx)
        assert result["differences"][name]["estimate"] == pytest.approx(diff, rel=1e-9)
        assert result["differences"][name]["se"] == pytest.approx(math.sqrt(var), rel=1e-9)


def test_length_controlled_differences_degenerate_inputs():
    methods = ["A", "B", "A", "B", "A", "B"]
    scores = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    # A constant length is collinear with the intercept: nothing is identified.
    flat = cmp.length_controlled_differences(scores, [100] * 6, methods, "A")
    assert flat["differences"]["B"] == {"estimate": None, "se": None, "ci95": None}
    assert flat["length_slope"]["estimate"] is None
    # Three observations, three parameters: estimates exist, no degree of freedom for a standard error.
    exact = cmp.length_controlled_differences([1.0, 2.0, 4.0], [10, 20, 30], ["A", "B", "A"], "A")
    assert exact["df"] == 0 and exact["differences"]["B"]["se"] is None
    # By hand: A at (10, 1) and (30, 4) gives slope 3/20 and intercept -0.5; B at 20 -> 2 - (-0.5 + 3) = -0.5.
    assert exact["differences"]["B"]["estimate"] == pytest.approx(-0.5)
    assert exact["length_slope"]["estimate"] == pytest.approx(0.15)
    with pytest.raises(ValueError):
        cmp.length_controlled_differences(scores, [1, 2, 3, 4, 5, 6], methods, "Z")
    with pytest.raises(ValueError):
        cmp.length_controlled_differences(scores, [1, 2, 3], methods, "A")


def test_within_group_share_by_hand_and_as_the_inverse_variance_inflation_factor():
    # Group a: 1, 3 (mean 2); group b: 5, 7, 9 (mean 7). Within: 2 + 8 = 10; total about the mean 5: 16+4+0+4+16 = 40.
    assert cmp.within_group_share([1, 3, 5, 7, 9], ["a", "a", "b", "b", "b"]) == pytest.approx(0.25)
    assert cmp.within_group_share([4, 4, 4], ["a", "b", "a"]) is None  # constant: no variance to share
    assert cmp.within_group_share([1, 1, 2, 2], ["a", "a", "b", "b"]) == 0.0  # one value per group
    from statsmodels.stats.outliers_influence import variance_inflation_factor

    methods, lengths = _design(np.random.default_rng(4))
    labels = np.array(methods)
    X = np.column_stack([np.ones(len(labels)), labels == "B", labels == "C", lengths]).astype(float)
    assert cmp.within_group_share(lengths, methods) == pytest.approx(1 / variance_inflation_factor(X, 3), rel=1e-9)
    with pytest.raises(ValueError):
        cmp.within_group_share([1, 2], ["a"])


def test_length_controlled_differences_refuse_a_collinear_design():
    # Each method's replies have one of two neighbouring lengths, 100 characters apart between the methods:
    # within share = (4 x 0.25 x 2) / (2 + 8 x 50^2) = 2 / 20002, far below the minimum.
    methods = ["A"] * 4 + ["B"] * 4
    lengths = [100, 101, 100, 101, 200, 201, 200, 201]
    scores = [60, 70, 61, 69, 55, 65, 54, 66]
    result = cmp.length_controlled_differences(scores, lengths, methods, "A")
    assert result["identifiable"] is False and result["reason"] == "collinear"
    assert result["within_length_share"] == pytest.approx(2 / 20002)
    assert result["differences"]["B"] == {"estimate": None, "se": None, "ci95": None}
    assert result["length_slope"]["estimate"] is None and result["adjusted_means"] == {}
    # With the minimum lowered below the share, the same design is fitted: the extrapolation the rule prevents.
    forced = cmp.length_controlled_differences(scores, lengths, methods, "A", min_within_share=1e-5)
    assert forced["identifiable"] is True and forced["reason"] is None
    assert forced["differences"]["B"]["estimate"] < -900  # 10 points a character over 100 characters
    flat = cmp.length_controlled_differences(scores, [150] * 8, methods, "A")
    assert flat["reason"] == "constant_length" and flat["within_length_share"] is None


def test_adjusted_means_are_each_methods_fitted_score_at_the_mean_length():
    methods, lengths = _design(np.random.default_rng(2))
    scores = [50 + 5 * (m == "B") - 3 * (m == "C") + 0.1 * n for m, n in zip(methods, lengths)]
    result = cmp.length_controlled_differences(scores, lengths, methods, "A")
    assert result["identifiable"] is True and result["within_length_share"] > cmp.MIN_WITHIN_LENGTH_SHARE
    at_mean = 50 + 0.1 * np.mean(lengths)  # the exact line, by hand
    expected = {"A": at_mean, "B": at_mean + 5, "C": at_mean - 3}
    assert result["adjusted_means"] == pytest.approx(expected, abs=1e-9)
    assert list(result["adjusted_means"]) == list(dict.fromkeys(methods))
