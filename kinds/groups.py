"""Grouping arrays without pandas, to the bit of what pandas computes: the groups of rows by their keys (pandas'
groupby), each group's mean (groupby's mean), a Series' mean, and the codes of labels in order of first appearance
(pandas.factorize).

Scoring a dialogue evaluation needs only these from pandas, whose import costs a third of a second and some 40 MB
in every process that scores; the result documents must not change by a bit (tests/test_compatibility.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from common.lazy_modules import lazy

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")


def group_means(groups: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The mean and the number of the values that are not NaN of each group 0..n-1 (`groups`: each value's group),
    NaN for a group without any: pandas' groupby mean, which adds a group's values in row order with Kahan's
    compensation. Sums of whole numbers below 2**53 are exact in any order and are added at once; other values go
    through the same compensated additions, all groups together, a value of each at a time."""
    values = np.asarray(values, dtype=float)
    keep = ~np.isnan(values)
    groups, values = np.asarray(groups)[keep], values[keep]
    counts = np.bincount(groups, minlength=n)
    if not values.size or (np.array_equal(values, np.trunc(values)) and float(np.abs(values).sum()) < 2.0 ** 53):
        sums = np.bincount(groups, weights=values, minlength=n)
    else:
        sums = _compensated_sums(groups, values, counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts, counts


def _compensated_sums(groups: np.ndarray, values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each group's Kahan sum of its values in row order (pandas' group_mean), as pandas adds them."""
    order = np.argsort(groups, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(len(groups), dtype=np.int64)
    rank[order] = np.arange(len(groups)) - starts[groups[order]]  # the how-many-th value of its group each one is
    by_rank = np.argsort(rank, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(rank))])
    sums, compensation = np.zeros(len(counts)), np.zeros(len(counts))
    for first, end in zip(bounds[:-1], bounds[1:]):
        at = by_rank[first:end]  # the k-th value of every group that has k values: a group at most once
        g = groups[at]
        y = values[at] - compensation[g]
        t = sums[g] + y
        compensation[g] = (t - sums[g]) - y
        sums[g] = t
    return sums


def grouped(keys: list[np.ndarray], sort: bool = True) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each row's group by its `keys` (integer arrays) and each group's keys: the groups in the keys' sorted order, or
    in order of first appearance (pandas' groupby with sort=False)."""
    columns = [np.asarray(k, dtype=np.int64) for k in keys]
    if not len(columns[0]):
        return np.zeros(0, dtype=np.int64), [c[:0] for c in columns]
    # One number per row that sorts as the keys do (each key's offset from its least, in mixed radix), so that one
    # flat sort groups them: far cheaper than numpy's unique over rows.
    lows = [int(c.min()) for c in columns]
    sizes = [int(c.max()) - low + 1 for c, low in zip(columns, lows)]
    if float(np.prod(sizes, dtype=float)) >= 2.0 ** 62:
        raise ValueError("the keys' ranges are too wide to group")
    number = np.zeros(len(columns[0]), dtype=np.int64)
    for column, low, size in zip(columns, lows, sizes):
        number = number * size + (column - low)
    found, first, inverse = np.unique(number, return_index=True, return_inverse=True)
    if not sort:
        order, rank = _appearance(first)
        inverse, found = rank[inverse], found[order]
    decoded = []
    for low, size in zip(reversed(lows), reversed(sizes)):
        found, digit = np.divmod(found, size)
        decoded.append(digit + low)
    return inverse.ravel(), decoded[::-1]


def nan_mean(values: np.ndarray) -> float:
    """The mean of the values that are not NaN, NaN without any: pandas' Series.mean (numpy's sum of the values with
    0 for each NaN, over their number)."""
    missing = np.isnan(values)
    count = int(values.size - missing.sum())
    return float(np.where(missing, 0.0, values).sum()) / count if count else float("nan")


def first_appearance_codes(labels) -> tuple[np.ndarray, list]:
    """Each label's code, the labels numbered in order of first appearance, and those labels: pandas.factorize (an
    array of numbers through numpy, other labels, which need only be hashable, through a dict)."""
    if not (isinstance(labels, np.ndarray) and labels.dtype.kind in "biuf"):
        found: dict = {}
        codes = [found.setdefault(label, len(found)) for label in labels]
        return np.array(codes, dtype=np.int64), list(found)
    if not labels.size:
        return np.zeros(0, dtype=np.int64), []
    uniques, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order, rank = _appearance(first)
    return rank[inverse.ravel()], uniques[order].tolist()


def _appearance(first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique values put in order of first appearance (`first`: the row each first appears on): that order,
    and each one's place in it."""
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return order, rank
