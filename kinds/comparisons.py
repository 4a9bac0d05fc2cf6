"""Statistics for comparing methods scored by an LLM judge: multiple testing, pairwise preference, length bias.

- :func:`holm` and :func:`benjamini_hochberg` adjust a family of p-values (Holm-Bonferroni step-down, and the
  Benjamini-Hochberg step-up that controls the false discovery rate).
- :func:`pair_outcome`, :func:`position_consistent` and :func:`win_rates` read pairwise judgments made twice,
  once in each presentation order (MT-Bench style position swap), and summarise them with bootstrap
  intervals that resample whole clusters (sessions).
- :func:`bradley_terry` fits Bradley-Terry strengths to pairwise outcomes (MM algorithm, Hunter 2004).
- :func:`length_correlation` and :func:`length_controlled_differences` measure how much reply length drives
  the judge's scores; :func:`within_group_share` says whether a file can tell length from method at all.

As in :mod:`kinds.stats`, results are plain Python floats (or None where a number does not exist).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Generic, Hashable, NamedTuple, Sequence, TypedDict, TypeVar

from common.lazy_modules import lazy
from kinds.groups import first_appearance_codes
from kinds.stats import (
    DEFAULT_LEVEL,
    DEFAULT_N_BOOT,
    as_float,
    average_ranks,
    percentile_interval,
    resample_weights,
    t_quantile,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike
else:
    np = lazy("numpy")  # loaded on first use: the app starts without numpy

VERDICTS = ("first", "second", "tie")
OUTCOMES = ("A", "B", "tie")


class Rate(TypedDict):
    """A share with its bootstrap interval."""

    rate: float | None  # None without outcomes
    ci95: list[float] | None  # None with fewer than 2 clusters


class WinRates(TypedDict):
    """A's wins, ties and losses against B (win_rates)."""

    win: Rate
    tie: Rate
    loss: Rate
    n: int  # outcomes
    clusters: int


class Coefficient(TypedDict):
    """A coefficient of a least-squares fit with its standard error and interval (None where not estimable)."""

    estimate: float | None
    se: float | None
    ci95: list[float] | None


class LengthCorrelation(TypedDict):
    """How scores go with reply length (length_correlation)."""

    pearson: float | None
    spearman: float | None
    n: int  # the pairs used


M = TypeVar("M", bound=Hashable)  # what names a method


class LengthControlled(TypedDict, Generic[M]):
    """Each method's difference from the reference at equal length (length_controlled_differences)."""

    differences: dict[M, Coefficient]  # every method but the reference
    length_slope: Coefficient  # points per unit of length
    adjusted_means: dict[M, float]  # each method's fitted score at the mean length ({} when not identifiable)
    identifiable: bool  # whether the data tell length from method
    reason: str | None  # why not: "collinear" or "constant_length"; None when identifiable
    within_length_share: float | None  # within_group_share of the lengths; None when every length is the same
    n: int
    df: int  # residual degrees of freedom


# --- multiple testing --------------------------------------------------------------------------


def _present(p_values: Sequence[float | None]) -> dict[int, float]:
    """The p-values given (not None), by position, in order."""
    present = {i: p for i, p in enumerate(p_values) if p is not None}
    for i, p in present.items():
        if not 0.0 <= p <= 1.0:  # also rejects NaN
            raise ValueError(f"p-value {p!r} at position {i} is not in [0, 1]")
    return {i: float(p) for i, p in present.items()}


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values in input order; None entries stay None and do not count in m."""
    present = _present(p_values)
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    # The k-th smallest (0-based) is multiplied by m - k; the running maximum keeps the step-down monotone.
    for k, i in enumerate(sorted(present, key=present.__getitem__)):
        running = max(running, min(1.0, (m - k) * present[i]))
        adjusted[i] = running
    return adjusted


def benjamini_hochberg(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg adjusted p-values in input order; None entries stay None and do not count in m."""
    present = _present(p_values)
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 1.0
    # The k-th smallest (1-based) is divided by k / m, written as statsmodels' fdrcorrection does so the floats agree
    # to the last bit; the running minimum from the largest down keeps the step-up monotone.
    ranked = sorted(present, key=present.__getitem__)
    for k in range(m, 0, -1):
        i = ranked[k - 1]
        running = min(running, present[i] / (k / m))
        adjusted[i] = running
    return adjusted


def significant_after_holm(p_values: Sequence[float | None], alpha: float = 0.05) -> list[bool | None]:
    """Whether each hypothesis is rejected by Holm's procedure at family-wise level alpha (None stays None)."""
    return [None if p is None else p <= alpha for p in holm(p_values)]


# --- pairwise preference with position swap ----------------------------------------------------

# What a verdict means from A's point of view in each presentation order.
_A_FIRST = {"first": "A", "second": "B", "tie": "tie"}
_B_FIRST = {"first": "B", "second": "A", "tie": "tie"}


def _as_outcomes(first_order: str, swapped_order: str) -> tuple[str, str]:
    for verdict in (first_order, swapped_order):
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    return _A_FIRST[first_order], _B_FIRST[swapped_order]


def pair_outcome(first_order: str, swapped_order: str) -> str:
    """Outcome for A ("A", "B" or "tie") from the verdicts with A shown first and with B shown first.

    Each verdict is "first", "second" or "tie" as the judge answered for that order. A reply wins only if it
    wins in both orders; a verdict that flips with the order, or any tie, makes the pair a tie.
    """
    with_a_first, with_b_first = _as_outcomes(first_order, swapped_order)
    return with_a_first if with_a_first == with_b_first else "tie"


def position_consistent(first_order: str, swapped_order: str) -> bool:
    """True when both verdicts name the same reply (or both are ties), whatever the order it was shown in."""
    with_a_first, with_b_first = _as_outcomes(first_order, swapped_order)
    return with_a_first == with_b_first


def win_rates(
    outcomes: Sequence[str],
    clusters: Sequence[Hashable] | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
) -> WinRates:
    """Shares of A wins, ties and losses, each with a percentile bootstrap interval resampling clusters.

    outcomes are pair_outcome results ("A", "B", "tie") from A's point of view; clusters[i] names the
    cluster (session) of outcome i, and without clusters every outcome is its own cluster. Rounds of one
    session are not independent, so each resample draws whole clusters with replacement and pools their
    outcomes. Returns {"win": {"rate", "ci95"}, "tie": ..., "loss": ..., "n": outcomes, "clusters": count};
    rates are None without outcomes, intervals None with fewer than 2 clusters.
    """
    if clusters is None:
        clusters = range(len(outcomes))
    if len(clusters) != len(outcomes):
        raise ValueError("outcomes and clusters must have the same length")
    index: dict[Hashable, int] = {}
    for cluster in clusters:
        index.setdefault(cluster, len(index))
    # counts[c, k]: outcomes of kind k (win, tie, loss) in cluster c.
    counts = np.zeros((len(index), 3))
    for outcome, cluster in zip(outcomes, clusters):
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {outcome!r}")
        counts[index[cluster], ("A", "tie", "B").index(outcome)] += 1
    n = len(outcomes)
    boot = None
    if len(index) >= 2:
        # Every resample holds at least one cluster, and every cluster at least one outcome: no division by 0.
        drawn = resample_weights(len(index), n_boot, seed) @ counts
        boot = drawn / drawn.sum(axis=1, keepdims=True)

    def rate(k: int) -> Rate:
        return {"rate": float(counts[:, k].sum() / n) if n else None,
                "ci95": None if boot is None else percentile_interval(boot[:, k], level)}

    return {"win": rate(0), "tie": rate(1), "loss": rate(2), "n": n, "clusters": len(index)}


# --- Bradley-Terry -----------------------------------------------------------------------------


class BradleyTerry(NamedTuple):
    """Bradley-Terry strengths (summing to 1), methods from strongest to weakest, and how the fit ended."""

    strengths: dict
    ranking: list
    iterations: int
    converged: bool


def _strongly_connected(credit: np.ndarray) -> bool:
    """Whether every node reaches every other along edges i -> j with credit[i, j] > 0."""
    edges = credit > 0
    for graph in (edges, edges.T):
        seen = {0}
        stack = [0]
        while stack:
            for j in np.flatnonzero(graph[stack.pop()]):
                if j not in seen:
                    seen.add(int(j))
                    stack.append(int(j))
        if len(seen) < len(credit):
            return False
    return True


def bradley_terry(
    comparisons: Sequence[tuple[Hashable, Hashable, str]],
    methods: Sequence[Hashable] | None = None,
    prior: float = 1.0,
    tol: float = 1e-10,
    max_iter: int = 10_000,
) -> BradleyTerry:
    """Fit Bradley-Terry strengths P(i beats j) = p_i / (p_i + p_j) by Hunter's (2004) MM algorithm.

    comparisons are (method_a, method_b, outcome) with outcome "A", "B" or "tie"; a tie counts as half a win
    for each side. methods fixes the output order (default: order of first appearance) and may list methods
    without comparisons. Strengths are normalised to sum to 1.

    prior adds that many virtual ties between every pair of methods (the default 1.0: one tie per pair, i.e.
    half a win for each side). It keeps every strength finite and positive: without it a method that never wins
    or ties has maximum-likelihood strength 0, and groups of methods never compared with each other have no
    common scale. Its pull toward equal strengths fades as real comparisons accumulate; with many real
    comparisons per pair it hardly moves the fit, and disconnected groups are then compared only through the
    virtual ties (so they come out close to each other). prior=0 gives the plain maximum-likelihood fit and
    raises ValueError when that does not exist: when some group of methods never wins or ties against the
    others (this covers a method that never wins and a disconnected comparison graph).

    Iteration stops when no strength moves by more than tol, or after max_iter rounds (converged False).
    The ranking sorts by strength, equal strengths keeping the methods order.
    """
    if prior < 0:
        raise ValueError("prior must be >= 0")
    names = list(methods) if methods is not None else []
    if methods is None:
        for a, b, _ in comparisons:
            for name in (a, b):
                if name not in names:
                    names.append(name)
    index = {name: i for i, name in enumerate(names)}
    if len(index) != len(names):
        raise ValueError("methods must not repeat")
    k = len(names)
    # credit[i, j]: wins of i over j (ties count half); games[i, j]: comparisons between i and j.
    credit = np.zeros((k, k))
    for a, b, outcome in comparisons:
        if a not in index or b not in index:
            raise ValueError(f"comparison ({a!r}, {b!r}) names a method not in methods")
        if a == b:
            raise ValueError(f"a method cannot be compared with itself: {a!r}")
        i, j = index[a], index[b]
        if outcome == "A":
            credit[i, j] += 1.0
        elif outcome == "B":
            credit[j, i] += 1.0
        elif outcome == "tie":
            credit[i, j] += 0.5
            credit[j, i] += 0.5
        else:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {outcome!r}")
    credit += (prior / 2.0) * (1.0 - np.eye(k))
    if k == 0:
        return BradleyTerry({}, [], 0, True)
    if k > 1 and not _strongly_connected(credit):
        raise ValueError("no finite maximum-likelihood strengths: some methods never win or tie against the "
                         "others (or were never compared with them); pass prior > 0")
    games = credit + credit.T
    wins = credit.sum(axis=1)
    p = np.full(k, 1.0 / k)
    converged = k == 1
    iterations = 0
    while not converged and iterations < max_iter:
        iterations += 1
        # The diagonal of games is 0, so the i == j term adds nothing.
        denominators = (games / (p[:, None] + p[None, :])).sum(axis=1)
        new = wins / denominators
        new /= new.sum()
        converged = bool(np.max(np.abs(new - p)) <= tol)
        p = new
    strengths = {name: float(p[i]) for i, name in enumerate(names)}
    ranking = sorted(names, key=lambda name: -strengths[name])
    return BradleyTerry(strengths, ranking, iterations, converged)


# --- length bias -------------------------------------------------------------------------------


def _pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    dx, dy = x - x.mean(), y - y.mean()
    r = float(np.sum(dx * dy) / math.sqrt(np.sum(dx * dx) * np.sum(dy * dy)))
    return min(max(r, -1.0), 1.0)


def length_correlation(scores: ArrayLike, lengths: ArrayLike) -> LengthCorrelation:
    """Pearson and Spearman correlation of scores with reply lengths: {"pearson", "spearman", "n"}.

    Pairs with a None (or NaN) score or length are left out and n counts the pairs used; a coefficient is None with
    fewer than 2 pairs or when either side is constant.
    """
    x, y = np.array(lengths, dtype=float), np.array(scores, dtype=float)  # None becomes NaN
    if len(y) != len(x):
        raise ValueError("scores and lengths must have the same length")
    paired = ~(np.isnan(x) | np.isnan(y))
    x, y = x[paired], y[paired]
    return {
        "pearson": _pearson(x, y),
        "spearman": _pearson(average_ranks(x), average_ranks(y)),
        "n": int(paired.sum()),
    }


def _coefficient(value: float | None, se: float | None, t_crit: float | None) -> Coefficient:
    ci = None if value is None or se is None or t_crit is None else [value - t_crit * se, value + t_crit * se]
    return {"estimate": value, "se": se, "ci95": ci}


MIN_WITHIN_LENGTH_SHARE = 0.1  # below it the length's variance inflation factor exceeds 10: see within_group_share


def within_group_share(values: ArrayLike, groups: Sequence[Hashable] | np.ndarray) -> float | None:
    """Share of the values' sum of squares about their mean that lies within groups: sum over groups of the squares
    about the group's mean, over the total; None when the values are constant.

    For the length column of a fit on group dummies and length it is 1 / VIF, the inverse of the length's variance
    inflation factor: the length's R^2 on the dummies is the share between groups.
    """
    x = np.asarray(values, dtype=float)
    if x.shape != (len(groups),):
        raise ValueError("values and groups must be 1-D sequences of the same length")

    total = float(np.sum((x - x.mean()) ** 2)) if x.size else 0.0
    if total == 0.0:
        return None
    codes = first_appearance_codes(groups)[0]
    means = np.bincount(codes, weights=x) / np.bincount(codes)
    return min(float(np.sum((x - means[codes]) ** 2)) / total, 1.0)


def length_controlled_differences(
    scores: ArrayLike,
    lengths: ArrayLike,
    methods: Sequence[M] | np.ndarray,
    reference: M,
    level: float = DEFAULT_LEVEL,
    min_within_share: float = MIN_WITHIN_LENGTH_SHARE,
) -> LengthControlled[M]:
    """Each method's mean score minus the reference method's, with reply length regressed out.

    Fits by ordinary least squares score = b0 + sum_m d_m [method == m] + slope * length, the reference
    method being the baseline, so d_m is method m's difference from the reference at equal length.
    Standard errors are sqrt(diag(s^2 (X'X)^-1)) with s^2 = RSS / (n - p), and intervals use Student's t
    with n - p degrees of freedom at `level`. Returns {"differences": {method: {"estimate", "se", "ci95"}},
    "length_slope": {...}, "adjusted_means": {method: b0 + d_m + slope * mean length}, "identifiable", "reason",
    "within_length_share", "n", "df"}, methods in order of first appearance.

    The slope rests on how length varies within methods only; when that is less than `min_within_share` of the
    length's variance (within_group_share), length and method cannot be told apart, and nothing is estimated:
    "identifiable" is False, "reason" "collinear" ("constant_length" when every length is the same), estimates
    None and "adjusted_means" empty. Standard errors and intervals are None when no degree of freedom is left.
    """
    y = np.asarray(scores, dtype=float)
    length = np.asarray(lengths, dtype=float)
    if not (y.shape == length.shape == (len(methods),)):
        raise ValueError("scores, lengths and methods must be 1-D sequences of the same length")

    appearance, uniques = first_appearance_codes(methods)
    if reference not in uniques:
        raise ValueError(f"reference method {reference!r} has no scores")
    others = [m for m in uniques if m != reference]
    # The reference is the baseline (-1); the others are numbered in order of first appearance.
    lookup = np.array([others.index(m) if m != reference else -1 for m in uniques])
    labels = lookup[appearance]
    n, p = y.size, len(others) + 2
    df = n - p
    share = within_group_share(length, appearance)
    reason = "constant_length" if share is None else "collinear" if share < min_within_share else None
    estimates: list[float | None] = [None] * p
    ses: list[float | None] = [None] * p
    adjusted: dict[M, float] = {}
    if reason is None:
        X = np.column_stack([np.ones(n), *(labels == i for i in range(len(others))), length]).astype(float, copy=False)
        coef, _, rank, _ = np.linalg.lstsq(X, y, rcond=None)
        if rank < p:  # cannot happen above the minimum share but through rounding: nothing is estimated then
            reason = "collinear"
        else:
            estimates = [float(c) for c in coef]
            at_mean = float(coef[0] + coef[-1] * length.mean())
            adjusted = {m: at_mean + (0.0 if m == reference else float(coef[1 + others.index(m)])) for m in uniques}
            if df > 0:
                residuals = y - X @ coef
                variance = float(residuals @ residuals) / df
                ses = [as_float(math.sqrt(max(v, 0.0))) for v in np.diag(variance * np.linalg.inv(X.T @ X))]
    t_crit = t_quantile(0.5 + level / 2.0, df) if df > 0 else None
    return {
        "differences": {m: _coefficient(estimates[1 + i], ses[1 + i], t_crit) for i, m in enumerate(others)},
        "length_slope": _coefficient(estimates[-1], ses[-1], t_crit),
        "adjusted_means": adjusted,
        "identifiable": reason is None,
        "reason": reason,
        "within_length_share": share,
        "n": n,
        "df": df,
    }
