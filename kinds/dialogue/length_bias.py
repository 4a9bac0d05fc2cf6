"""How much reply length drives the judge's fine scores: the `length_bias` block of a dialogue result.

Judges are known to prefer longer answers. For the parsed fine judgments: the correlation of the total with the
reply's length in characters, and each method's difference from the first method before and after regressing out
length (kinds/comparisons.py does the math). A sample of the points is kept for the scatter plot.

The differences at equal length are estimated only when the file can tell length from method: when at least
MIN_WITHIN_LENGTH_SHARE of the length's variance lies within methods ("identifiable", and else a "reason" and the
"within_length_share" it was judged on). A method whose fitted score at the mean length falls outside the score's
0-100 scale is listed in "out_of_range": the linear fit extrapolates there, and the page does not present it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NotRequired, TypedDict

from common.lazy_modules import lazy
from kinds.comparisons import (
    MIN_WITHIN_LENGTH_SHARE,
    Coefficient,
    length_controlled_differences,
    length_correlation,
)
from kinds.dialogue.records import ReplyLengths, Table

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")

POINTS_PER_METHOD = 400  # of the scatter plot, spread evenly over the method's judgments
SCALE = (0.0, 100.0)  # the fine total's range


class LengthBias(TypedDict):
    """The `length_bias` block of a dialogue result (one judge's, or the panel's)."""

    reference: str | None  # the first method with parsed fine judgments; None without any
    pearson: float | None  # the correlations of the fine total with the reply's length
    spearman: float | None
    n: int  # the judgments with both
    raw_differences: dict[str, float]  # each other method's mean minus the reference's
    differences: dict[str, Coefficient]  # the same at equal length
    length_slope: Coefficient | None  # points per character; None with fewer than two methods
    # since the kind's format version 2 (absent from results kept before): whether the file tells length from method,
    # else why not ("collinear", "constant_length", "fewer_than_two_methods"), the share of the length's variance
    # within methods it was judged on and the minimum it must reach, each method's fitted score at the mean length
    # ({} when not identifiable) and the methods whose fitted score lies outside 0-100
    identifiable: NotRequired[bool]
    reason: NotRequired[str | None]
    within_length_share: NotRequired[float | None]
    min_within_length_share: NotRequired[float]
    adjusted_means: NotRequired[dict[str, float]]
    out_of_range: NotRequired[list[str]]
    points: dict[str, list[list[float]]]  # up to POINTS_PER_METHOD [length, total] of each method, for the scatter


def length_bias(judgments: Table, lengths: ReplyLengths, methods: list[str]) -> LengthBias:
    """Correlation of fine totals with reply length, raw and length-controlled differences from the first method
    (when the file separates length from method), and up to POINTS_PER_METHOD (length, total) points per method;
    `judgments` as records.judgment_table."""
    fine = judgments.only("session_idx", "round", "method", "total").rows(
        judgments["mode"].equals("fine") & judgments["status"].equals("ok") & ~np.isnan(judgments["total"]))
    sizes = lengths.of(fine)
    known = sizes >= 0
    sizes, scores = sizes[known], fine["total"][known]
    names = fine["method"][known]  # codes and a few names, not a string object per judgment
    present = [m for m in methods if names.equals(m).any()]
    by_method = {m: (sizes[names.equals(m)], scores[names.equals(m)]) for m in present}
    reference = present[0] if present else None
    document: LengthBias = {"reference": reference, **length_correlation(scores, sizes),
                "raw_differences": {}, "differences": {}, "length_slope": None,
                "identifiable": False, "reason": "fewer_than_two_methods", "within_length_share": None,
                "min_within_length_share": MIN_WITHIN_LENGTH_SHARE, "adjusted_means": {}, "out_of_range": [],
                "points": {m: _spread(list(zip(size.tolist(), score.tolist()))) for m, (size, score) in by_method.items()}}
    if len(present) < 2:
        return document
    first = present[0]  # the reference
    means = {m: float(np.mean(score)) for m, (_size, score) in by_method.items()}
    categories = names.names
    controlled = length_controlled_differences(scores, sizes, names.codes, categories.index(first))
    by_name = {categories[code]: value for code, value in controlled["adjusted_means"].items()}
    adjusted = {m: by_name[m] for m in present if m in by_name}
    document["raw_differences"] = {m: means[m] - means[first] for m in present[1:]}
    document["differences"] = {categories[code]: value for code, value in controlled["differences"].items()}
    document["length_slope"] = controlled["length_slope"]
    document["identifiable"] = controlled["identifiable"]
    document["reason"] = controlled["reason"]
    document["within_length_share"] = controlled["within_length_share"]
    document["adjusted_means"] = adjusted
    document["out_of_range"] = [m for m, value in adjusted.items() if not SCALE[0] <= value <= SCALE[1]]
    return document


def _spread(points: list[tuple[int, float]]) -> list[list[float]]:
    """At most POINTS_PER_METHOD of the points, evenly spaced in their order (the same ones on every run)."""
    if len(points) <= POINTS_PER_METHOD:
        return [list(p) for p in points]
    step = len(points) / POINTS_PER_METHOD
    return [list(points[int(i * step)]) for i in range(POINTS_PER_METHOD)]
