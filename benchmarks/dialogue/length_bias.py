"""How much reply length drives the judge's fine scores: the `length_bias` block of a dialogue result.

Judges are known to prefer longer answers. For the parsed fine judgments: the correlation of the total with the
reply's length in characters, and each method's difference from the first method before and after regressing out
length (benchmarks/comparisons.py does the math). A sample of the points is kept for the scatter plot.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.comparisons import length_controlled_differences, length_correlation
from benchmarks.dialogue.format import iter_sessions_with_offsets

POINTS_PER_METHOD = 400  # of the scatter plot, spread evenly over the method's judgments


def reply_lengths(path: str | Path, methods: list[str]) -> dict[tuple[int, int, str], int]:
    """(session index, round, method) -> the reply's length in characters, read from the uploaded file."""
    return {(idx, rnd.number, method): len(rnd.responses[method])
            for idx, _offset, session in iter_sessions_with_offsets(path)
            for rnd in session.rounds for method in methods if method in rnd.responses}


def length_bias(judgments: list[dict], lengths: dict[tuple[int, int, str], int], methods: list[str]) -> dict:
    """Correlation of fine totals with reply length, raw and length-controlled differences from the first method,
    and up to POINTS_PER_METHOD (length, total) points per method."""
    rows = [(j["method"], lengths[key], float(j["total"])) for j in judgments
            if j["mode"] == "fine" and j["status"] == "ok" and j["total"] is not None
            and (key := (j["session_idx"], j["round"], j["method"])) in lengths]
    present = [m for m in methods if any(method == m for method, _length, _total in rows)]
    by_method = {m: [(length, total) for method, length, total in rows if method == m] for m in present}
    scores = [total for _m, _length, total in rows]
    reference = present[0] if present else None
    document = {"reference": reference, **length_correlation(scores, [length for _m, length, _t in rows]),
                "raw_differences": {}, "differences": {}, "length_slope": None,
                "points": {m: _spread(points) for m, points in by_method.items()}}
    if len(present) < 2:
        return document
    means = {m: float(np.mean([total for _length, total in points])) for m, points in by_method.items()}
    controlled = length_controlled_differences(scores, [length for _m, length, _t in rows],
                                               [m for m, _length, _t in rows], reference)
    document.update(raw_differences={m: means[m] - means[reference] for m in present[1:]},
                    differences=controlled["differences"], length_slope=controlled["length_slope"])
    return document


def _spread(points: list[tuple[int, float]]) -> list[list[float]]:
    """At most POINTS_PER_METHOD of the points, evenly spaced in their order (the same ones on every run)."""
    if len(points) <= POINTS_PER_METHOD:
        return [list(p) for p in points]
    step = len(points) / POINTS_PER_METHOD
    return [list(points[int(i * step)]) for i in range(POINTS_PER_METHOD)]
