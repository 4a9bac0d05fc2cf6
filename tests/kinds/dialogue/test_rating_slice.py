"""The slice people rate in the browser (issue 40, item 1): strata sizes worked out by hand, a draw that is uniform
within each stratum and reproducible by its seed, the suggested number of ratings against hand-computed values and a
reference computation with numpy, the judge's reply totals of an evaluation, and the slice kept on SQLite and
PostgreSQL."""
from __future__ import annotations

import math
from collections import Counter
from itertools import combinations

import numpy as np
import pytest

from kinds import registry
from kinds.dialogue import rating_slice
from storage.store import Store
from tests.kinds.dialogue.test_sample_grid import evaluation


def population(methods=("A", "B"), rounds=(1, 2), sessions=6) -> dict:
    replies = [(f"s{i}", k, m) for i in range(sessions) for k in rounds for m in methods]
    return rating_slice.strata(replies, list(methods))


@pytest.mark.parametrize("available, size, expected", [
    ([6, 6, 6, 6], 10, [3, 3, 2, 2]),  # 10 // 4 = 2 each, the remainder 2 to the first two
    ([6, 6, 6, 6], 24, [6, 6, 6, 6]),
    ([6, 6, 6, 6], 100, [6, 6, 6, 6]),  # never more than a stratum has
    ([1, 5, 5], 9, [1, 3, 3]),  # 3 each; the first has only one
    ([4, 4, 4], 2, [1, 1, 0]),
    ([], 5, []),
])
def test_each_stratum_takes_an_equal_share_and_the_remainder_goes_to_the_first(available, size, expected):
    assert rating_slice.stratum_sizes(available, size) == expected


def test_strata_follow_the_evaluations_order_of_methods_then_rounds():
    replies = [("s1", 2, "A"), ("s1", 1, "B"), ("s1", 1, "A"), ("s2", 1, "A"), ("s1", 2, "B")]
    found = rating_slice.strata(replies, ["B", "A"])
    assert list(found) == [("B", 1), ("B", 2), ("A", 1), ("A", 2)]
    assert found[("A", 1)] == [("s1", 1, "A"), ("s2", 1, "A")]  # in the order given (the file's)


def test_a_draw_takes_the_stratum_sizes_without_repeats_and_the_same_seed_draws_the_same():
    strata = population()
    drawn = rating_slice.draw(strata, 10, seed=3)
    assert len(drawn) == len(set(drawn)) == 10
    per_stratum = Counter((m, k) for _s, k, m in drawn)
    assert [per_stratum[key] for key in strata] == [3, 3, 2, 2]
    assert rating_slice.draw(strata, 10, seed=3) == drawn
    assert rating_slice.draw(strata, 10, seed=4) != drawn


def test_within_a_stratum_every_reply_is_as_likely_and_the_order_mixes_the_strata():
    strata = population(sessions=4)  # four strata of four replies
    picked, pairs, first = Counter(), Counter(), Counter()
    seeds = range(3000)
    for seed in seeds:
        drawn = rating_slice.draw(strata, 4, seed)  # one from each stratum
        picked.update(r for r in drawn if (r[2], r[1]) == ("A", 1))
        first[(drawn[0][2], drawn[0][1])] += 1
        two = rating_slice.draw(strata, 8, seed)  # two from each
        pairs[tuple(sorted(r for r in two if (r[2], r[1]) == ("B", 2)))] += 1
    # each of four replies 1/4 of the time: binomial sd sqrt(.25 x .75 / 3000) = 0.0079, 0.035 is 4.4 sd
    assert sorted(picked) == sorted(strata[("A", 1)])
    assert all(abs(n / len(seeds) - 1 / 4) < 0.035 for n in picked.values()), picked
    # each of the C(4, 2) = 6 pairs 1/6 of the time: sd 0.0068
    assert sorted(pairs) == sorted(tuple(sorted(p)) for p in combinations(strata[("B", 2)], 2))
    assert all(abs(n / len(seeds) - 1 / 6) < 0.035 for n in pairs.values()), pairs
    # shuffled: the first reply to rate comes from each stratum a quarter of the time, not from the first stratum
    assert all(abs(n / len(seeds) - 1 / 4) < 0.035 for n in first.values()) and len(first) == 4, first


def test_ratings_needed_by_hand():
    # A: 0, 5, 10 -> mean 5, squares 25 + 0 + 25 = 50, variance 50 / 2 = 25, s = 5; width 3.92:
    # (2 x 1.96 x 5 / 3.92)^2 = 5^2 = 25 exactly (not 26 from the float error)
    assert rating_slice.ratings_needed({"A": [0, 5, 10]}, 3.92) == 25
    # B: 40, 60 -> s = sqrt(200) = 14.142; width 10: (3.92 x 14.142 / 10)^2 = 30.73 -> 31; the worst method counts
    assert rating_slice.ratings_needed({"A": [0, 5, 10], "B": [40, 60]}, 10) == 31
    # A alone at width 10: (3.92 x 5 / 10)^2 = 3.84 -> 4
    assert rating_slice.ratings_needed({"A": [0, 5, 10], "C": [70]}, 10) == 4  # one value has no spread to use
    assert rating_slice.ratings_needed({"A": [50, 50, 50]}, 10) == 0
    assert rating_slice.ratings_needed({"C": [70], "D": []}, 10) == 0
    with pytest.raises(ValueError, match="positive"):
        rating_slice.ratings_needed({"A": [0, 5, 10]}, 0)


def test_ratings_needed_equals_a_numpy_computation():
    rng = np.random.default_rng(7)
    values = {"A": list(rng.normal(60, 12, 80)), "B": list(rng.uniform(0, 100, 50)), "C": list(rng.normal(40, 3, 9))}
    for width in (2.5, 5, 10, 20):
        expected = max(math.ceil((2 * 1.96 * np.std(v, ddof=1) / width) ** 2) for v in values.values())
        assert rating_slice.ratings_needed(values, width) == expected, width


def test_the_judges_totals_of_an_evaluation_are_its_replies(client):
    evaluation_id = evaluation(client)  # A: s1 90, 50; s2 30, 70. B: s1 10, 55; s2 35, 20
    record = client.application.extensions["store"].get_evaluation(evaluation_id, with_result=False)
    assert rating_slice.judged_replies(client.application.extensions["store"], record) == {
        ("s1", 1, "A"): 90, ("s1", 1, "B"): 10, ("s1", 2, "A"): 50, ("s1", 2, "B"): 55,
        ("s2", 1, "A"): 30, ("s2", 1, "B"): 35, ("s2", 2, "A"): 70, ("s2", 2, "B"): 20}


def test_a_slice_is_kept_and_replaced(store_url):
    store = Store(store_url, registry.tables())
    store.add_upload({"id": "u1", "sha256": "x", "kind": "dialogue", "filename": "f.jsonl", "size": 1, "summary": {},
                      "warnings": []})
    store.add_evaluation({"id": "e1", "upload_id": "u1", "kind": "dialogue", "methods": ["A"], "settings": {},
                          "total": 1})
    assert rating_slice.slice_of(store, "e1") is None
    rating_slice.save_slice(store, "e1", 3, 2, [("s1", 1, "A"), ("s2", 2, "A")], "ada")
    rating_slice.save_slice(store, "e1", 4, 1, [("s9", 1, "A")], None)
    kept = rating_slice.slice_of(store, "e1")
    assert (kept["seed"], kept["size"], kept["items"], kept["created_by"]) == (4, 1, [("s9", 1, "A")], None)
