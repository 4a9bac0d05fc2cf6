"""kinds/groups.py against pandas, whose figures the result documents kept before: bit for bit."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kinds.groups import first_appearance_codes, group_means, grouped, nan_mean


@pytest.mark.parametrize("seed", range(40))
def test_group_means_are_pandas_groupby_means_to_the_bit(seed):
    rng = np.random.default_rng(seed)
    n, rows = int(rng.integers(1, 40)), int(rng.integers(1, 3000))
    groups = rng.integers(0, n, rows)
    values = rng.random(rows) * 100 / 3  # fractions: the order and the compensation of the additions show
    values[rng.random(rows) < 0.1] = np.nan
    if seed % 4 == 0:
        values = np.round(values)  # whole numbers: summed at once
    means, counts = group_means(groups, values, n)
    expected = pd.Series(values).groupby(groups).agg(["mean", "count"]).reindex(range(n))
    assert np.array_equal(means, expected["mean"].to_numpy(), equal_nan=True)
    assert counts.tolist() == expected["count"].fillna(0).astype(int).tolist()


def test_naive_sums_would_differ_from_pandas():
    # the reason for the compensated sums: adding a group's values one after another gives other last bits
    rng = np.random.default_rng(0)
    groups, values = rng.integers(0, 5, 2000), rng.random(2000) * 100 / 3
    naive = np.bincount(groups, weights=values) / np.bincount(groups)
    assert not np.array_equal(naive, pd.Series(values).groupby(groups).mean().to_numpy())


def test_groups_in_sorted_order_or_in_order_of_first_appearance():
    session, rnd = np.array([2, 0, 2, 1, 0, 2]), np.array([1, 3, 1, 2, 1, 2])
    frame = pd.DataFrame({"s": session, "r": rnd, "row": range(6)})
    for sort in (True, False):
        groups, (s, r) = grouped([session, rnd], sort=sort)
        expected = frame.groupby(["s", "r"], sort=sort)["row"].agg(list)
        assert list(zip(s.tolist(), r.tolist())) == expected.index.tolist()
        assert [np.flatnonzero(groups == g).tolist() for g in range(len(s))] == expected.tolist()
    assert [a.tolist() for a in grouped([np.zeros(0), np.zeros(0)])[1]] == [[], []]
    rng = np.random.default_rng(5)
    three = [rng.integers(-3, 4, 500), rng.integers(0, 2000, 500), rng.integers(-9, -5, 500)]  # negative, wide
    frame = pd.DataFrame({"a": three[0], "b": three[1], "c": three[2], "row": range(500)})
    for sort in (True, False):
        groups, found = grouped(three, sort=sort)
        expected = frame.groupby(["a", "b", "c"], sort=sort)["row"].agg(list)
        assert list(zip(*(k.tolist() for k in found))) == expected.index.tolist()
        assert [np.flatnonzero(groups == g).tolist() for g in range(len(found[0]))] == expected.tolist()


def test_a_mean_skipping_nan_is_series_mean_to_the_bit():
    values = np.random.default_rng(3).random(1001) * 100 / 7
    values[::9] = np.nan
    assert nan_mean(values) == pd.Series(values).mean()
    assert np.isnan(nan_mean(np.array([np.nan]))) and np.isnan(nan_mean(np.zeros(0)))


@pytest.mark.parametrize("labels", [np.array([3, 1, 3, 2, 1]), np.array([0.5, -1.0, 0.5]), ["b", "a", "b", "c"],
                                    np.array(["x", "y", "x"], dtype=object), np.zeros(0, dtype=np.int8)])
def test_codes_in_order_of_first_appearance_are_factorizes(labels):
    codes, found = first_appearance_codes(labels)
    expected_codes, expected_found = pd.factorize(labels if isinstance(labels, np.ndarray) else
                                                  pd.Series(labels, dtype=object))
    assert codes.tolist() == expected_codes.tolist() and found == list(expected_found)
