"""The row-level diff of two runs, kind-neutral: one row per pair of samples (kinds/paired_rows.py's `align`), the
chosen metric's value in each run and their difference, filters, sorting, paging and a word-level diff of the texts.

"Improved" always means the other run's value is higher than the baseline's, whatever the metric: every paired
metric of the kinds is "higher is better". A row counts as changed when a binary verdict differs at all, or when a
score differs by more than the threshold (|Δ| > threshold); the summary counts only changed rows as improved or
regressed, so its three counts follow the same threshold as the filters.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Iterable

from kinds.kind import Metric, Sample

MAX_SEARCHED = 20_000  # characters of each text a pattern looks at: a bound on the time one row can take
MAX_DIFF_WORDS = 3_000  # longer texts are shown whole, without a word diff (difflib is quadratic at worst)
PER_PAGE = 50
DIRECTIONS = ("improved", "regressed", "unchanged")
SORTS = ("key", "delta")


@dataclass(frozen=True)
class Row:
    """One pair of samples seen through one metric: `change` is improved, regressed, unchanged or missing (a run
    has no value for it: a failed judgment)."""

    baseline: Sample
    other: Sample
    before: float | None
    after: float | None
    diff: float | None
    change: str

    @property
    def changed(self) -> bool:
        """Whether the row counts as changed (improved or regressed)."""
        return self.change in ("improved", "regressed")

    @property
    def texts_differ(self) -> bool:
        """Whether the two runs judged different texts."""
        return (self.baseline.text or "") != (self.other.text or "")


def key_text(key: tuple) -> str:
    """A sample's key as people read it, e.g. "s1 / 2"."""
    return " / ".join(str(part) for part in key)


def make_rows(pairs: Iterable[tuple[Sample, Sample]], metric: Metric, threshold: float = 0.0) -> list[Row]:
    """The rows of the pairs for one metric, in the pairs' order."""
    rows = []
    for baseline, other in pairs:
        before, after = baseline.values.get(metric.name), other.values.get(metric.name)
        if before is None or after is None:
            rows.append(Row(baseline, other, before, after, None, "missing"))
            continue
        diff = float(after) - float(before)
        moved = diff != 0 if metric.binary else abs(diff) > threshold
        change = "unchanged" if not moved else ("improved" if diff > 0 else "regressed")
        rows.append(Row(baseline, other, float(before), float(after), diff, change))
    return rows


def summary(rows: Iterable[Row]) -> dict[str, int]:
    """How many rows improved, regressed, stayed unchanged, or lack a value in a run."""
    counts = dict.fromkeys((*DIRECTIONS, "missing"), 0)
    for row in rows:
        counts[row.change] += 1
    return counts


def matches(row: Row, pattern: re.Pattern) -> bool:
    """Whether the pattern occurs in the row's method, key or either text (the first MAX_SEARCHED characters)."""
    texts = (row.baseline.method, key_text(row.baseline.key), row.baseline.text or "", row.other.text or "")
    return any(pattern.search(text[:MAX_SEARCHED]) for text in texts)


def select(rows: list[Row], *, changed: bool = False, direction: str = "", pattern: re.Pattern | None = None,
           sort: str = "key") -> list[Row]:
    """The rows the filters keep, sorted: "key" keeps the baseline's order, "delta" puts the largest |Δ| first
    (rows without a difference last; ties in the baseline's order)."""
    kept = [r for r in rows if (not changed or r.changed) and (not direction or r.change == direction)
            and (pattern is None or matches(r, pattern))]
    if sort == "delta":
        kept.sort(key=lambda r: (r.diff is None, -abs(r.diff or 0.0)))
    return kept


def page_of(rows: list[Row], page: int, per_page: int | None = None) -> tuple[list[Row], int, int]:
    """The rows of one page (1-based, clamped to the pages there are), that page's number and the number of pages."""
    per_page = per_page or PER_PAGE
    pages = max(1, -(-len(rows) // per_page))
    page = min(max(1, page), pages)
    return rows[(page - 1) * per_page:page * per_page], page, pages


def word_diff(before: str, after: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The two texts as pieces (mark, text), mark "" (the same in both), "del" (only in `before`) or "ins" (only in
    `after`), word by word; whitespace stays with the words around it. Texts are kept as text, for the template to
    escape; over MAX_DIFF_WORDS words each text is one unmarked piece."""
    old, new = re.split(r"(\s+)", before), re.split(r"(\s+)", after)
    if max(len(old), len(new)) > 2 * MAX_DIFF_WORDS:
        return [("", before)], [("", after)]
    left: list[tuple[str, str]] = []
    right: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            left.append(("", "".join(old[i1:i2])))
            right.append(("", "".join(new[j1:j2])))
            continue
        if i2 > i1:
            left.append(("del", "".join(old[i1:i2])))
        if j2 > j1:
            right.append(("ins", "".join(new[j1:j2])))
    return _merged(left), _merged(right)


def _merged(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Neighbouring pieces with the same mark joined."""
    out: list[tuple[str, str]] = []
    for mark, text in pieces:
        if out and out[-1][0] == mark:
            out[-1] = (mark, out[-1][1] + text)
        elif text:
            out.append((mark, text))
    return out
