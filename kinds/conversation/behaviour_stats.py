"""How simulated and real users behave, by one label set (issue 39, item 1), and how a label set agrees with people's
(item 2): the numbers of docs/metrics.md#behaviour-of-real-and-simulated-users, one function each.

A label set (label_sets.py) gives each conversation the eleven dimensions of behaviour.py, or None; a dimension's
value may be None where the labeller gave none. Every count below leaves those out.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NotRequired, TypedDict

from kinds import stats
from kinds.agreement import Agreement, bootstrap_kappa, bootstrap_quadratic_kappa
from kinds.comparisons import holm
from kinds.conversation.behaviour import DIMENSIONS, Dimension
from kinds.conversation.format import SOURCES

LabelSet = Sequence[dict[str, Any] | None]


class Distribution(TypedDict):
    """One source's labels of one dimension: how many, and the count and share of each value (the dimension's
    values in order); the mean of a 1-5 scale."""

    n: int
    counts: list[int]
    shares: list[float | None]  # None without labels
    mean: NotRequired[float | None]  # 1-5 scales only


class Comparison(TypedDict):
    """Simulated ("agent") against real ("human") users on one dimension: both distributions and the test that fits
    (chi-square with Cramér's V for categories, Mann-Whitney U with the rank-biserial correlation for 1-5 scales);
    `p_holm` is Holm-adjusted over the dimensions of the same scope (all tasks, or one task)."""

    agent: Distribution
    human: Distribution
    test: str  # "chi_square" or "mann_whitney"
    statistic: float | None  # chi-square, or U of the simulated users
    df: int | None  # chi-square's degrees of freedom (None for Mann-Whitney)
    p_value: float | None
    p_holm: float | None
    effect: float | None  # Cramér's V, or the rank-biserial correlation (positive: simulated users higher)


class DimensionComparison(TypedDict):
    """One dimension compared over all conversations and per task."""

    key: str
    scale: bool
    values: list  # the dimension's values, in order
    all: Comparison
    by_task: dict[str, Comparison]


class Behaviour(TypedDict):
    """One label set's comparison of simulated and real users: how many conversations of each it labels."""

    labelled: dict[str, int]
    dimensions: list[DimensionComparison]


class Check(TypedDict):
    """A label set against the people's on one dimension, over the conversations both label: accuracy and Cohen's
    kappa, and for 1-5 scales the quadratic-weighted kappa and the mean absolute error, each with a bootstrap CI."""

    n: int
    accuracy: Agreement
    kappa: Agreement
    weighted_kappa: NotRequired[Agreement]
    mae: NotRequired[Agreement]


class DimensionCheck(TypedDict):
    """One dimension's check, over all conversations both label and for each source."""

    key: str
    scale: bool
    all: Check
    agent: Check
    human: Check


class LabelCheck(TypedDict):
    """A label set checked against a reference set, per dimension."""

    pairs: int  # conversations both sets label
    dimensions: list[DimensionCheck]


def distribution(dimension: Dimension, labels: Sequence[Any]) -> Distribution:
    """Counts and shares of the dimension's values among `labels` (None left out); the mean of a 1-5 scale."""
    given = [value for value in labels if value is not None]
    counts = [sum(1 for value in given if value == v) for v in dimension.values]
    out: Distribution = {"n": len(given), "counts": counts,
                         "shares": [count / len(given) if given else None for count in counts]}
    if dimension.is_scale:
        out["mean"] = sum(given) / len(given) if given else None
    return out


def compare(dimension: Dimension, agent: Sequence[Any], human: Sequence[Any]) -> Comparison:
    """Simulated against real users' labels of one dimension: their distributions and the test that fits (p_holm
    left None: `adjust` sets it over a scope's dimensions)."""
    sides = {"agent": [v for v in agent if v is not None], "human": [v for v in human if v is not None]}
    dist = {source: distribution(dimension, values) for source, values in sides.items()}
    if dimension.is_scale:
        mw = stats.mann_whitney(sides["agent"], sides["human"])
        test, statistic, df, p_value, effect = "mann_whitney", mw.u, None, mw.p_value, mw.rank_biserial
    else:
        chi = stats.chi_square_independence([dist["agent"]["counts"], dist["human"]["counts"]])
        test, statistic, df, p_value, effect = ("chi_square", chi.statistic, chi.df if chi.statistic is not None
                                                else None, chi.p_value, chi.cramers_v)
    return {"agent": dist["agent"], "human": dist["human"], "test": test, "statistic": statistic, "df": df,
            "p_value": p_value, "p_holm": None, "effect": effect}


def adjust(comparisons: list[Comparison]) -> None:
    """Set each comparison's `p_holm`: Holm's adjustment over these comparisons' p-values (one scope's)."""
    for comparison, adjusted in zip(comparisons, holm([c["p_value"] for c in comparisons])):
        comparison["p_holm"] = adjusted


def behaviour(labels: LabelSet, sources: Sequence[str], tasks: Sequence[str],
              task_order: Sequence[str]) -> Behaviour:
    """One label set's comparison of simulated and real users, over all conversations and per task (`task_order`),
    for conversations given by their labels, sources and tasks (aligned lists)."""
    def values(key: str, source: str, task: str | None) -> list:
        return [entry[key] for entry, s, t in zip(labels, sources, tasks)
                if entry is not None and s == source and (task is None or t == task)]

    dimensions: list[DimensionComparison] = [
        {"key": d.key, "scale": d.is_scale, "values": list(d.values),
         "all": compare(d, values(d.key, "agent", None), values(d.key, "human", None)),
         "by_task": {task: compare(d, values(d.key, "agent", task), values(d.key, "human", task))
                     for task in task_order}}
        for d in DIMENSIONS]
    adjust([d["all"] for d in dimensions])
    for task in task_order:
        adjust([d["by_task"][task] for d in dimensions])
    labelled = {source: sum(1 for entry, s in zip(labels, sources) if entry is not None and s == source)
                for source in SOURCES}
    return {"labelled": labelled, "dimensions": dimensions}


def _estimate(values: Sequence[float], seed: int, weights=None) -> Agreement:
    """The mean of `values` with its percentile bootstrap interval (None bounds with fewer than 2 values)."""
    ci = stats.bootstrap_ci(values, seed=seed, weights=weights) if len(values) >= 2 else None
    return {"value": sum(values) / len(values) if values else None, "low": ci[0] if ci else None,
            "high": ci[1] if ci else None, "n": len(values)}


def check(dimension: Dimension, labels: Sequence[Any], reference: Sequence[Any], seed: int = stats.DEFAULT_SEED
          ) -> Check:
    """A label set's values of one dimension against the reference's (aligned; pairs with both values only)."""
    pairs = [(a, b) for a, b in zip(labels, reference) if a is not None and b is not None]
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    clusters = list(range(len(pairs)))  # each conversation is its own unit of resampling
    weights = stats.resample_weights(len(pairs), seed=seed) if len(pairs) >= 2 else None  # the kappas' draws too
    out: Check = {"n": len(pairs), "accuracy": _estimate([float(x == y) for x, y in pairs], seed, weights),
                  "kappa": bootstrap_kappa(a, b, clusters, seed=seed)}
    if dimension.is_scale:
        out["weighted_kappa"] = bootstrap_quadratic_kappa(a, b, dimension.values, clusters, seed=seed)
        out["mae"] = _estimate([abs(x - y) for x, y in pairs], seed, weights)
    return out


def label_check(labels: LabelSet, reference: LabelSet, sources: Sequence[str],
                seed: int = stats.DEFAULT_SEED) -> LabelCheck:
    """A label set against a reference set on the conversations both label, per dimension: over all of them and
    for simulated and real users separately."""
    both = [i for i, (a, b) in enumerate(zip(labels, reference)) if a is not None and b is not None]

    def side(key: str, source: str | None, of: LabelSet) -> list:
        return [of[i][key] for i in both if source is None or sources[i] == source]  # type: ignore[index]

    dimensions: list[DimensionCheck] = []
    for d in DIMENSIONS:
        checks = {name: check(d, side(d.key, source, labels), side(d.key, source, reference), seed)
                  for name, source in (("all", None), ("agent", "agent"), ("human", "human"))}
        dimensions.append({"key": d.key, "scale": d.is_scale, "all": checks["all"], "agent": checks["agent"],
                           "human": checks["human"]})
    return {"pairs": len(both), "dimensions": dimensions}
