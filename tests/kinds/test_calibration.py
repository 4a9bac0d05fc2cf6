"""kinds.calibration against ppi_python (the PPI++ authors' package), scipy and hand computations."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from kinds import calibration as cal
from kinds.calibration import (
    NO_JUDGED,
    NO_VARIANCE,
    TOO_FEW_RATED,
    Stratum,
    enough_rated,
    judge_only_mean,
    people_only_mean,
    ppi_difference,
    ppi_mean,
    ppi_strata,
    reversed_orders,
    stratified_judge_mean,
    stratified_people_mean,
    stratified_ppi_mean,
    uninformative_judge,
)

ppi_py = pytest.importorskip("ppi_py")  # requirements-dev.txt pins ppi-python


def evaluation(seed: int, judged: int, rated: int, slope: float = 1.0, noise: float = 8.0):
    """People's ratings Y and the judge's scores f of `judged` replies, and the indices of `rated` of them."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(60, 15, judged)
    judge = slope * quality + rng.normal(0, noise, judged) + 5.0
    people = quality + rng.normal(0, 6, judged)
    chosen = rng.permutation(judged)[:rated]
    return judge, people, chosen


def split(judge, people, chosen):
    """ppi_python's arguments: Y and Yhat of the rated replies, Yhat of the unrated ones."""
    mask = np.zeros(judge.size, dtype=bool)
    mask[chosen] = True
    return people[mask], judge[mask], judge[~mask]


def ppi_plugin_variance(y, yhat, yhat_unlabeled, lam):
    """ppi_python's two variance terms at lambda, each divided by its count less one instead of its count.

    ppi_mean_ci's half width is z sqrt(var0(Y - lam Yhat) / n + var0(lam Yhat_unlabeled) / u); with lam=0 and
    Y - lam Yhat as the labels it gives the first term alone, so the second is the difference."""
    z = scipy.stats.norm.ppf(0.975)
    n, u = y.size, yhat_unlabeled.size
    low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_unlabeled, alpha=0.05, lam=lam)
    both = ((high - low) / (2 * z)).item() ** 2
    low, high = ppi_py.ppi_mean_ci(y - lam * yhat, yhat, yhat_unlabeled, alpha=0.05, lam=0.0)
    rectifier = ((high - low) / (2 * z)).item() ** 2
    return rectifier * n / (n - 1) + (both - rectifier) * u / (u - 1)


# --- one stratum against ppi_python ---------------------------------------------------------------


@pytest.mark.parametrize("seed, judged, rated, slope, noise", [
    (1, 40, 10, 1.0, 8.0), (2, 200, 30, 0.8, 15.0), (3, 1000, 50, 1.2, 20.0), (4, 25, 5, 1.0, 40.0),
    (5, 300, 290, 1.0, 10.0),
])
def test_value_and_weight_equal_ppi_python_power_tuned(seed, judged, rated, slope, noise):
    judge, people, chosen = evaluation(seed, judged, rated, slope, noise)
    y, yhat, unlabeled = split(judge, people, chosen)
    ours = ppi_mean(judge[chosen], people[chosen], judge)
    theirs = ppi_py.ppi_mean_pointestimate(y, yhat, unlabeled).item()  # lam=None: power tuned
    assert ours["value"] == pytest.approx(theirs, rel=1e-12, abs=1e-9)
    # Their lambda weighs mean(f unrated) - mean(f rated), ours mean(f all) - mean(f rated): ours = theirs N / u.
    lam = (theirs - y.mean()) / (unlabeled.mean() - yhat.mean())
    assert 0 < ours["weight"] < 1
    assert ours["weight"] == pytest.approx(lam * judged / unlabeled.size, rel=1e-9)
    assert (ours["n_rated"], ours["n_judged"]) == (rated, judged)


@pytest.mark.parametrize("seed, judged, rated", [(6, 40, 10), (7, 500, 40), (8, 60, 3)])
def test_interval_at_a_fixed_weight_is_ppi_pythons_with_unbiased_variances_and_t(seed, judged, rated):
    judge, people, chosen = evaluation(seed, judged, rated)
    y, yhat, unlabeled = split(judge, people, chosen)
    lam = 0.6  # ppi_python's lambda; ours on mean(f all) - mean(f rated) is lam N / u
    ours = ppi_mean(judge[chosen], people[chosen], judge, weight=lam * judged / unlabeled.size)
    assert ours["value"] == pytest.approx(ppi_py.ppi_mean_pointestimate(y, yhat, unlabeled, lam=lam).item(),
                                          rel=1e-12)
    variance = ppi_plugin_variance(y, yhat, unlabeled, lam)
    assert ours["se"] ** 2 == pytest.approx(variance, rel=1e-9)
    # Student's t with rated - 1 degrees of freedom (ppi_python: the normal quantile)
    low, high = scipy.stats.t.interval(0.95, rated - 1, loc=ours["value"], scale=np.sqrt(variance))
    assert (ours["low"], ours["high"]) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))


def test_weight_stops_at_one_where_ppi_pythons_goes_on():
    # A judge whose scale is a third of people's: the slope of people on the judge is about 3; ppi_python's lambda
    # passes u / N (ours 1), and ours is ppi_python's at lam = u / N.
    judge, people, chosen = evaluation(9, 80, 20, slope=0.3, noise=1.0)
    y, yhat, unlabeled = split(judge, people, chosen)
    theirs = ppi_py.ppi_mean_pointestimate(y, yhat, unlabeled).item()
    assert (theirs - y.mean()) / (unlabeled.mean() - yhat.mean()) > unlabeled.size / 80
    ours = ppi_mean(judge[chosen], people[chosen], judge)
    assert ours["weight"] == 1.0
    at_bound = ppi_py.ppi_mean_pointestimate(y, yhat, unlabeled, lam=unlabeled.size / 80).item()
    assert ours["value"] == pytest.approx(at_bound, rel=1e-12)
    # lambda = 1: the judge's mean of all replies corrected by its mean error on the slice
    assert ours["value"] == pytest.approx(judge.mean() + (people[chosen] - judge[chosen]).mean(), rel=1e-12)


def test_a_judge_against_people_gets_weight_zero_like_ppi_python():
    judge, people, chosen = evaluation(10, 100, 20, slope=-1.0)
    y, yhat, unlabeled = split(judge, people, chosen)
    ours = ppi_mean(judge[chosen], people[chosen], judge)
    assert ours["weight"] == 0.0
    assert ours["value"] == pytest.approx(ppi_py.ppi_mean_pointestimate(y, yhat, unlabeled).item(), rel=1e-12)
    assert ours["value"] == pytest.approx(people[chosen].mean(), rel=1e-12)


# --- hand-computed cases ----------------------------------------------------------------------------


def test_weight_zero_is_the_classical_mean_and_t_interval():
    people = np.array([62.0, 71.0, 55.0, 80.0, 68.0, 74.0])
    judge = np.array([60.0, 65.0, 58.0, 70.0, 66.0, 69.0, 50.0, 90.0])
    expected = scipy.stats.t.interval(0.95, 5, loc=people.mean(), scale=scipy.stats.sem(people))
    for estimate in (ppi_mean(judge[:6], people, judge, weight=0.0), people_only_mean(people),
                     stratified_people_mean([(judge[:6], people, judge)])):
        assert estimate["value"] == pytest.approx(people.mean())
        assert (estimate["low"], estimate["high"]) == (pytest.approx(expected[0]), pytest.approx(expected[1]))
    assert people_only_mean(people)["n_judged"] == 0 and people_only_mean(people)["weight"] is None
    # The judge-only mean: the same t interval of the judge's scores.
    judge_only = judge_only_mean(judge)
    expected = scipy.stats.t.interval(0.95, 7, loc=judge.mean(), scale=scipy.stats.sem(judge))
    assert (judge_only["value"], judge_only["low"], judge_only["high"]) == pytest.approx(
        (judge.mean(), *expected))
    assert (judge_only["n_rated"], judge_only["n_judged"], judge_only["weight"]) == (0, 8, None)


def test_weight_by_hand():
    # Rated: Y = 1, 2, 3, 4 with f = 2, 2, 4, 4; unrated f = 1, 5. cov(Y, f) over the rated, divided by n = 4:
    # means 2.5 and 3, products (-1.5)(-1) + (-0.5)(-1) + (0.5)(1) + (1.5)(1) = 4, / 4 = 1. var(f) over all six
    # (2, 2, 4, 4, 1, 5), mean 3, squares 1 + 1 + 1 + 1 + 4 + 4 = 12, / 5 = 2.4. lambda = 1 / 2.4 = 5/12.
    # theta = mean(Y) + lambda (mean(f all) - mean(f rated)) = 2.5 + 5/12 (3 - 3) = 2.5.
    estimate = ppi_mean([2, 2, 4, 4], [1, 2, 3, 4], [2, 2, 4, 4, 1, 5])
    assert estimate["weight"] == pytest.approx(5 / 12)
    assert estimate["value"] == pytest.approx(2.5)
    # With unrated f = 1, 8 instead: mean(f all) = 21 / 6 = 3.5, var = (1.5^2 x 2 + 0.5^2 x 2 + 2.5^2 + 4.5^2) / 5
    # = (4.5 + 0.5 + 6.25 + 20.25) / 5 = 6.3; lambda = 1 / 6.3; theta = 2.5 + 0.5 / 6.3.
    estimate = ppi_mean([2, 2, 4, 4], [1, 2, 3, 4], [2, 2, 4, 4, 1, 8])
    assert estimate["weight"] == pytest.approx(1 / 6.3)
    assert estimate["value"] == pytest.approx(2.5 + 0.5 / 6.3)


def test_a_judge_that_is_people_gets_a_weight_near_one_and_a_narrow_interval():
    rng = np.random.default_rng(11)
    people = rng.normal(60, 15, 2000)
    chosen = rng.permutation(2000)[:100]
    estimate = ppi_mean(people[chosen], people[chosen], people)  # the judge scores as people rate
    alone = people_only_mean(people[chosen])
    assert estimate["weight"] > 0.9
    assert abs(estimate["value"] - people.mean()) < 0.1 * alone["se"]
    assert estimate["se"] < 0.4 * alone["se"]


def test_an_uninformative_judge_leaves_the_slice_alone():
    # lambda estimated from n rated replies varies by about 1 / sqrt(n): 1,000 make a weight of 0 unmistakable.
    rng = np.random.default_rng(12)
    people = rng.normal(60, 15, 5000)
    judge = rng.normal(60, 15, 5000)  # independent of people
    chosen = rng.permutation(5000)[:1000]
    estimate = ppi_mean(judge[chosen], people[chosen], judge)
    assert estimate["weight"] < cal.LOW_WEIGHT and uninformative_judge(estimate)
    assert abs(estimate["value"] - people[chosen].mean()) < 0.2 * people_only_mean(people[chosen])["se"]


# --- why the unlabelled set is the unrated replies --------------------------------------------------


def test_counting_the_rated_replies_as_unlabelled_too_makes_ppi_pythons_interval_too_narrow():
    # 10 rated of 40, a judge close to people. Over 2,000 draws of the slice from new data: the spread of the
    # estimates against the standard errors reported. ppi_python given every reply as unlabelled (the rated ones
    # twice) reports errors 21% too small (its 95% intervals cover 87%); ours, with the unrated replies as
    # unlabelled, 7% too large (97%: t with 9 degrees of freedom).
    rng = np.random.default_rng(13)
    ours, overlapping = [], []
    for _ in range(2000):
        quality = rng.normal(60, 15, 40)
        judge = quality + rng.normal(0, 4, 40)
        people = quality + rng.normal(0, 4, 40)
        chosen = rng.permutation(40)[:10]
        estimate = ppi_mean(judge[chosen], people[chosen], judge)
        ours.append((estimate["value"], estimate["se"]))
        value = ppi_py.ppi_mean_pointestimate(people[chosen], judge[chosen], judge).item()
        low, high = ppi_py.ppi_mean_ci(people[chosen], judge[chosen], judge, alpha=0.05)
        overlapping.append((value, (high - low).item() / (2 * scipy.stats.norm.ppf(0.975))))
    # The target is people's mean of the population: 60.
    ours_a, overlapping_a = np.array(ours), np.array(overlapping)
    ratio_ours = np.sqrt(np.mean(ours_a[:, 1] ** 2)) / np.sqrt(np.mean((ours_a[:, 0] - 60) ** 2))
    ratio_overlapping = np.sqrt(np.mean(overlapping_a[:, 1] ** 2)) / np.sqrt(np.mean((overlapping_a[:, 0] - 60) ** 2))
    assert ratio_overlapping < 0.85
    assert 0.95 < ratio_ours < 1.15


# --- strata ----------------------------------------------------------------------------------------


def rounds(seed: int, sessions: int = 30, rated: int = 8, count: int = 4, session_sd: float = 0.0):
    """A method's rounds as Strata with their sessions: each session's replies share a session effect."""
    rng = np.random.default_rng(seed)
    effect = rng.normal(0, session_sd, sessions)
    ids = [f"s{i}" for i in range(sessions)]
    strata = []
    for k in range(count):
        quality = 60 + 2 * k + effect + rng.normal(0, 10, sessions)
        judge = quality + rng.normal(0, 6, sessions) + 4
        people = quality + rng.normal(0, 5, sessions)
        chosen = np.sort(rng.permutation(sessions)[:rated])
        strata.append(Stratum(judge[chosen], people[chosen], judge, [ids[i] for i in chosen], ids))
    return strata


def plain(strata):
    return [(s.judge_rated, s.people_rated, s.judge_all) for s in strata]


def test_stratified_without_sessions_at_a_fixed_weight_sums_the_strata():
    strata = plain(rounds(14))
    whole = stratified_ppi_mean(strata, weight=0.5)
    parts = [ppi_mean(*s, weight=0.5) for s in strata]
    assert whole["value"] == pytest.approx(np.mean([p["value"] for p in parts]), rel=1e-12)
    assert whole["se"] ** 2 == pytest.approx(sum(p["se"] ** 2 for p in parts) / 16, rel=1e-9)
    # degrees of freedom: rated replies - strata = 32 - 4
    half = scipy.stats.t.ppf(0.975, 28) * whole["se"]
    assert (whole["low"], whole["high"]) == (pytest.approx(whole["value"] - half), pytest.approx(whole["value"] + half))


def test_one_weight_for_all_strata_by_hand():
    strata = plain(rounds(15))
    num = den = 0.0
    for judge_rated, people_rated, judge_all in strata:
        n, total = len(people_rated), len(judge_all)
        share = (total - n) / total
        covariance = np.cov(people_rated, judge_rated, ddof=0)[0, 1]
        num += share * covariance / n
        den += np.var(judge_all, ddof=1) * (share ** 2 / n + (total - n) / total ** 2)
    expected = num / den
    whole = stratified_ppi_mean(strata)
    assert whole["weight"] == pytest.approx(expected, rel=1e-9)
    points = ppi_strata(strata)
    assert [p["weight"] for p in points] == [pytest.approx(expected, rel=1e-9)] * 4
    assert whole["value"] == pytest.approx(np.mean([p["value"] for p in points]), rel=1e-12)
    fixed = stratified_ppi_mean(strata, weight=whole["weight"])
    assert fixed["value"] == pytest.approx(whole["value"], rel=1e-12)


def test_weighting_by_judged_replies_pools_the_judges_scores():
    rng = np.random.default_rng(16)
    sizes = (10, 25, 40)
    strata = [((), (), rng.normal(50, 10, size)) for size in sizes]
    pooled = np.concatenate([s[2] for s in strata])
    assert stratified_judge_mean(strata, weighting="judged")["value"] == pytest.approx(pooled.mean())
    assert stratified_judge_mean(strata)["value"] == pytest.approx(np.mean([s[2].mean() for s in strata]))
    with pytest.raises(ValueError, match="weighting"):
        stratified_judge_mean(strata, weighting="sessions")


def test_sessions_keep_a_sessions_replies_together():
    # Two rounds in which every session's judge score is the same: they hold one round's information, not two.
    scores = np.array([40.0, 55.0, 61.0, 70.0, 72.0, 90.0])
    ids = [f"s{i}" for i in range(6)]
    together = stratified_judge_mean([((), (), scores, (), ids)] * 2)
    apart = stratified_judge_mean([((), (), scores)] * 2)
    one_round = scipy.stats.sem(scores)
    assert together["se"] == pytest.approx(one_round)  # the jackknife of a mean over sessions: s / sqrt(N)
    assert apart["se"] == pytest.approx(one_round / np.sqrt(2))  # as if 12 independent replies
    # degrees of freedom: judged - strata = 10, at most sessions - 1 = 5
    assert together["high"] - together["value"] == pytest.approx(scipy.stats.t.ppf(0.975, 5) * one_round)


def test_difference_without_sessions_adds_the_variances():
    first, second = plain(rounds(17)), plain(rounds(18))
    difference = ppi_difference(first, second)
    one, two = stratified_ppi_mean(first), stratified_ppi_mean(second)
    assert difference["value"] == pytest.approx(one["value"] - two["value"], rel=1e-12)
    assert difference["se"] ** 2 == pytest.approx(one["se"] ** 2 + two["se"] ** 2, rel=1e-9)
    assert difference["weight"] == pytest.approx((one["weight"] + two["weight"]) / 2)
    assert (difference["n_rated"], difference["n_judged"]) == (64, 240)


def test_difference_with_shared_sessions_is_narrower_than_the_sum():
    # Two methods on the same sessions, a large session effect in both: it cancels in the difference.
    rng = np.random.default_rng(19)
    effect = rng.normal(0, 20, 40)
    ids = [f"s{i}" for i in range(40)]
    methods = []
    for shift in (0.0, 3.0):
        strata = []
        for _ in range(3):
            quality = 60 + shift + effect + rng.normal(0, 5, 40)
            judge = quality + rng.normal(0, 5, 40)
            people = quality + rng.normal(0, 3, 40)
            chosen = np.sort(rng.permutation(40)[:15])
            strata.append(Stratum(judge[chosen], people[chosen], judge, [ids[i] for i in chosen], ids))
        methods.append(strata)
    paired = ppi_difference(methods[0], methods[1])
    one, two = stratified_ppi_mean(methods[0]), stratified_ppi_mean(methods[1])
    assert paired["value"] == pytest.approx(one["value"] - two["value"], rel=1e-12)
    assert paired["se"] < 0.7 * np.sqrt(one["se"] ** 2 + two["se"] ** 2)


# --- what is missing says why ----------------------------------------------------------------------


def test_too_few_rated_replies_give_no_estimate():
    strata = plain(rounds(20))
    strata[2] = (strata[2][0][:1], strata[2][1][:1], strata[2][2])
    for estimate in (stratified_ppi_mean(strata), stratified_people_mean(strata), ppi_difference(strata, strata)):
        assert estimate["value"] is None and estimate["low"] is None and estimate["se"] is None
        assert estimate["reason"] == TOO_FEW_RATED
    assert stratified_ppi_mean(strata)["n_rated"] == 25
    points = ppi_strata(strata)
    assert [p["reason"] for p in points] == [None, None, TOO_FEW_RATED, None]
    assert all(p["value"] is not None for i, p in enumerate(points) if i != 2)
    assert ppi_mean([50.0], [60.0], [50.0, 70.0])["reason"] == TOO_FEW_RATED
    assert people_only_mean([])["reason"] == TOO_FEW_RATED
    assert stratified_judge_mean([((), (), [1.0, 2.0]), ((), (), [])])["reason"] == NO_JUDGED


def test_no_spread_gives_a_value_without_an_interval():
    estimate = people_only_mean([70.0, 70.0, 70.0])
    assert estimate["value"] == 70.0 and estimate["se"] == 0.0
    assert estimate["low"] is None and estimate["high"] is None and estimate["reason"] == NO_VARIANCE


@pytest.mark.parametrize("args, message", [
    (([1.0, float("nan")], [1.0, 2.0], [1.0, 2.0, 3.0]), "judge_rated holds a missing"),
    (([1.0, 2.0], [1.0, None], [1.0, 2.0, 3.0]), "people_rated holds a missing"),
    (([1.0, 2.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]), "one score per rated reply"),
    (([1.0, 9.0], [1.0, 2.0], [1.0, 2.0, 3.0]), "judge_rated must be among judge_all"),
    (([[1.0]], [1.0], [1.0]), "1-D"),
    (([1.0, 2.0], ["good", "bad"], [1.0, 2.0, 3.0]), "people_rated must hold numbers only"),
])
def test_bad_scores_are_refused_by_name(args, message):
    with pytest.raises(ValueError, match=message):
        ppi_mean(*args)


@pytest.mark.parametrize("stratum, message", [
    (Stratum([1.0, 2.0], [1.0, 2.0], [1.0, 2.0, 3.0], ["a", "b"], None), "or of neither"),
    (Stratum([1.0, 2.0], [1.0, 2.0], [1.0, 2.0, 3.0], ["a", "z"], ["a", "b", "c"]), "'z' is not among"),
    (Stratum([1.0, 2.0], [1.0, 2.0], [1.0, 2.0, 3.0], ["a", "b"], ["a", "a", "c"]), "appears twice"),
    (Stratum([1.0, 3.0], [1.0, 2.0], [1.0, 2.0, 3.0], ["a", "b"], ["a", "b", "c"]), "differs from its score"),
    (Stratum([1.0, 2.0], [1.0, 2.0], [1.0, 2.0, 3.0], ["a"], ["a", "b", "c"]), "aligned"),
])
def test_bad_sessions_are_refused(stratum, message):
    with pytest.raises(ValueError, match=message):
        stratified_ppi_mean([stratum])


def test_other_bad_calls_are_refused():
    with pytest.raises(ValueError, match="sessions of every stratum"):
        stratified_ppi_mean([Stratum([1.0, 2.0], [1.0, 2.0], [1.0, 2.0, 3.0], ["a", "b"], ["a", "b", "c"]),
                             ([1.0, 2.0], [1.0, 2.0], [1.0, 2.0, 3.0])])
    with pytest.raises(ValueError, match="confidence"):
        ppi_mean([1.0, 2.0], [1.0, 3.0], [1.0, 2.0, 3.0], confidence=95)
    with pytest.raises(ValueError, match="at least one stratum"):
        stratified_ppi_mean([])


def test_confidence_sets_the_quantile():
    people = np.array([3.0, 5.0, 4.0, 8.0, 6.0])
    wide, narrow = people_only_mean(people, 0.99), people_only_mean(people, 0.5)
    for estimate, level in ((wide, 0.99), (narrow, 0.5)):
        expected = scipy.stats.t.interval(level, 4, loc=people.mean(), scale=scipy.stats.sem(people))
        assert (estimate["low"], estimate["high"]) == (pytest.approx(expected[0]), pytest.approx(expected[1]))


# --- warnings --------------------------------------------------------------------------------------


def estimate_of(value, weight=0.5):
    return {"value": value, "low": None, "high": None, "n_rated": 10, "n_judged": 40, "weight": weight, "se": 1.0,
            "reason": None}


def test_uninformative_judge_below_the_threshold():
    assert uninformative_judge(estimate_of(50, 0.05))
    assert not uninformative_judge(estimate_of(50, 0.1))  # the threshold itself is informative enough
    assert not uninformative_judge(estimate_of(50, None))  # not a PPI estimate
    assert uninformative_judge(estimate_of(50, 0.2), threshold=0.25)


def test_reversed_orders_lists_the_pairs_the_judge_ranks_the_other_way():
    calibrated = {"A": estimate_of(70), "B": estimate_of(66), "C": estimate_of(58), "D": estimate_of(None)}
    judge = {"A": estimate_of(68), "B": estimate_of(72), "C": estimate_of(60), "D": estimate_of(99)}
    assert reversed_orders(calibrated, judge) == [("A", "B")]
    assert reversed_orders(calibrated, calibrated) == []
    judge["C"] = estimate_of(75)  # now above both A and B by the judge, below both calibrated
    assert sorted(reversed_orders(calibrated, judge)) == [("A", "B"), ("A", "C"), ("B", "C")]


def test_a_round_with_fewer_replies_than_the_minimum_needs_them_all_rated():
    # a round that only two sessions reach: both rated is the whole round (nothing left to estimate), one is too few
    long_round = Stratum([50.0, 60.0, 70.0], [55.0, 62.0, 71.0], [50.0, 60.0, 70.0, 65.0, 58.0],
                         ["s1", "s2", "s3"], ["s1", "s2", "s3", "s4", "s5"])
    whole = Stratum([40.0, 80.0], [45.0, 79.0], [40.0, 80.0], ["s1", "s2"], ["s1", "s2"])
    half = Stratum([40.0], [45.0], [40.0, 80.0], ["s1"], ["s1", "s2"])
    assert enough_rated(2, 2) and not enough_rated(1, 2) and not enough_rated(2, 5) and enough_rated(3, 5)
    assert stratified_ppi_mean([long_round, whole])["reason"] is None
    assert stratified_ppi_mean([long_round, half])["reason"] == TOO_FEW_RATED
    # the whole round's people's mean is exact: it enters the AVG as is, whatever the judge said there
    assert stratified_people_mean([long_round, whole])["value"] == pytest.approx(((55 + 62 + 71) / 3 + 62.0) / 2)
