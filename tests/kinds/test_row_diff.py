"""The row-level diff's logic, kind-neutral: rows, counts, filters, sorting, paging, the word diff, safe patterns."""
from __future__ import annotations

import pytest

from kinds import row_diff, search
from kinds.kind import Metric, Sample
from kinds.paired_rows import align

SCORE = Metric("score", "Score")
PASS = Metric("pass", "Pass", binary=True)


def sample(key: tuple, score: float | None, passed: float | None, text: str = "", method: str = "agent") -> Sample:
    """A sample of an imaginary kind whose key has three parts (agent x task x index, say)."""
    return Sample(method=method, key=key, cluster=key[0], values={"score": score, "pass": passed}, text=text)


BASE = [sample(("t1", "web", 0), 50, 1, "go to the shop"), sample(("t1", "web", 1), 40, 0),
        sample(("t2", "os", 0), 70, 1), sample(("t2", "os", 1), 10, None), sample(("t3", "db", 0), 30, 0)]
OTHER = [sample(("t1", "web", 0), 52, 1, "go to the big shop"), sample(("t1", "web", 1), 80, 1),
         sample(("t2", "os", 0), 20, 0), sample(("t2", "os", 1), 10, 1), sample(("t9", "db", 0), 99, 1)]


def test_rows_pair_by_method_and_key_and_count_changes_by_the_threshold():
    rows = row_diff.make_rows(align(BASE, OTHER), SCORE)
    assert [(r.baseline.key, r.before, r.after, r.diff, r.change) for r in rows] == [
        (("t1", "web", 0), 50, 52, 2, "improved"), (("t1", "web", 1), 40, 80, 40, "improved"),
        (("t2", "os", 0), 70, 20, -50, "regressed"), (("t2", "os", 1), 10, 10, 0, "unchanged")]
    assert row_diff.summary(rows) == {"improved": 2, "regressed": 1, "unchanged": 1, "missing": 0}
    # |Δ| must be above the threshold: 2 is not above 2
    rows = row_diff.make_rows(align(BASE, OTHER), SCORE, threshold=2)
    assert row_diff.summary(rows) == {"improved": 1, "regressed": 1, "unchanged": 2, "missing": 0}


def test_binary_verdicts_change_when_they_flip_whatever_the_threshold():
    rows = row_diff.make_rows(align(BASE, OTHER), PASS, threshold=50)
    assert [r.change for r in rows] == ["unchanged", "improved", "regressed", "missing"]
    assert [r.baseline.key for r in row_diff.select(rows, changed=True)] == [("t1", "web", 1), ("t2", "os", 0)]
    assert [r.baseline.key for r in row_diff.select(rows, direction="regressed")] == [("t2", "os", 0)]


def test_sort_by_largest_difference_then_file_order_and_pattern_over_key_and_texts():
    rows = row_diff.make_rows(align(BASE, OTHER), SCORE)
    assert [r.diff for r in row_diff.select(rows, sort="delta")] == [-50, 40, 2, 0]
    assert [r.diff for r in row_diff.select(rows, pattern=search.compile_pattern("BIG"))] == [2]
    assert [r.diff for r in row_diff.select(rows, pattern=search.compile_pattern(r"os / 1$"))] == [0]


def test_pages_are_clamped():
    rows = row_diff.make_rows(align(BASE, OTHER), SCORE)
    assert [(len(p), n, total) for p, n, total in
            (row_diff.page_of(rows, k, per_page=3) for k in (0, 1, 2, 9))] == [(3, 1, 2), (3, 1, 2), (1, 2, 2),
                                                                                (1, 2, 2)]


def test_word_diff_marks_exactly_the_changed_words_and_keeps_text_as_text():
    before, after = row_diff.word_diff("go to the shop <b>now</b>", "go to the big shop <i>now</i>")
    assert before == [("", "go to the shop "), ("del", "<b>now</b>")]
    assert after == [("", "go to the "), ("ins", "big "), ("", "shop "), ("ins", "<i>now</i>")]
    assert "".join(t for _m, t in before) == "go to the shop <b>now</b>"


@pytest.mark.parametrize("pattern, message", [("(", "not a valid regular expression"), ("(a+)+$", "repeats a group"),
                                              ("(?:x|y*)*", "repeats a group"), ("a" * 201, "longer than 200")])
def test_bad_patterns_say_why(pattern, message):
    with pytest.raises(search.BadQuery, match=message):
        search.compile_pattern(pattern)


def test_harmless_patterns_compile():
    assert search.compile_pattern("  ") is None
    assert search.compile_pattern("(foo|bar)+ a{2} [ab]*").search("FOObar aa b")
