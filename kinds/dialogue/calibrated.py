"""The `calibration` block of a dialogue result with people's ratings: the judge's figures calibrated to people.

For each method, each figure people rated is given three ways (kinds/calibration.py does the math, docs/metrics.md
defines it): the judge's own (its scores of every reply taken as people's: the methods table's figure), people's own
(their ratings of the slice alone) and the calibrated one (PPI++: people's ratings of the slice and the judge's scores
of every reply). The strata are the rounds and the jackknife leaves out one session at a time:
- AVG: the mean over rounds (each round weighing the same) of the reply totals, the judge's a reply's cell (the mean
  of its samples; a panel's, the panel's score), people's the mean of their raters' totals;
- the keep-chatting rate x 100 (a rubric with a yes/no question): each round weighed by its replies judged, the
  judge's value of a reply its mean verdict x 100 (a panel's tie: 50), people's their majority verdict x 100 (a tie
  is left out);
- each dimension people rated, on its scale, weighed as the rate: the methods table's dimension means are over the
  replies, each round's replies counting once each.
A reply people rated counts in a figure only when the judge gave it that figure too (a failed judgment, a reply
with a total only, are left out of the figures they lack). The AL(k) curve calibrated is each round's estimate with
the AVG's lambda, given when every round has calibration.MIN_RATED rated replies or more (else the first round
short of them is named). Paired differences of two methods are calibrated as well (calibration.ppi_difference),
beside the judge's (the result's `comparisons`). Warnings: two methods whose calibrated order reverses the judge's,
and a figure whose power-tuning weight is below calibration.LOW_WEIGHT (the judge tells almost nothing of people's
ratings: the estimate rests on the slice).
"""
from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Literal, NotRequired, TypedDict

from kinds import calibration
from kinds.calibration import Estimate, Stratum, Weighting
from kinds.dialogue.metrics import Comparison

Metric = Literal["avg", "binary_rate"]  # the figures compared between methods (their keys in MethodScores)
COMPARED: dict[Metric, str] = {"avg": "fine", "binary_rate": "binary"}  # each one's metric in `comparisons`
RATED: dict[Metric, str] = {"avg": "total", "binary_rate": "verdict"}  # the rating each one is made of


class Figure(TypedDict):
    """One figure of one method, three ways."""

    judge: Estimate  # the judge's scores of every reply taken as people's (the methods table's figure)
    people: Estimate  # people's ratings of the slice alone
    calibrated: Estimate  # PPI++: people's ratings of the slice and the judge's scores of every reply


class CurvePoint(Estimate):
    """One round of the calibrated AL(k) curve."""

    round: int


class Curve(TypedDict):
    """A method's AL(k) calibrated: every round's estimate, or why there is none."""

    points: list[CurvePoint]  # empty when some round has too few rated replies
    reason: str | None  # None, or calibration.TOO_FEW_RATED
    round: int | None  # the first round with fewer than `min_rated` rated replies
    rated: int | None  # how many that round has


class MethodCalibration(TypedDict):
    """One method's calibrated figures (those people rated)."""

    avg: NotRequired[Figure]  # when people gave totals
    al_curve: NotRequired[Curve]  # with avg
    binary_rate: NotRequired[Figure]  # when the rubric asks a yes/no question and people answered it (x 100)
    dimensions: NotRequired[dict[str, Figure]]  # each dimension people rated, on its scale (when they rated one)


class JudgeDifference(TypedDict):
    """The judge's paired difference of the same pair: the `comparisons` entry's (per-session means)."""

    diff: float | None
    ci95: list[float] | None


class Difference(TypedDict):
    """A paired difference a - b of two methods' figure, calibrated."""

    a: str
    b: str
    metric: Metric
    calibrated: Estimate  # calibration.ppi_difference (weight: the mean of both methods' lambdas)
    judge: JudgeDifference


class ReversedOrder(TypedDict):
    """Two methods the calibrated figure ranks a over b and the judge's b over a."""

    code: Literal["reversed_order"]
    metric: Metric
    a: str
    b: str
    calibrated: dict[str, float | None]  # method -> its calibrated value
    judge: dict[str, float | None]  # method -> the judge's value
    significant: bool  # the calibrated difference's 95% interval excludes 0


class UninformativeJudge(TypedDict):
    """A method's figure whose power-tuning weight is so low that the estimate rests on the slice."""

    code: Literal["uninformative_judge"]
    metric: Metric
    method: str
    weight: float | None  # below threshold (never None here: Estimate's type)
    threshold: float  # calibration.LOW_WEIGHT


class Calibration(TypedDict):
    """The `calibration` block (only with people's ratings attached)."""

    rater: str  # whose scores are calibrated: the judge's label, or "panel"
    confidence: float  # of every interval
    min_rated: int  # rated replies each round needs (calibration.MIN_RATED)
    methods: dict[str, MethodCalibration]
    differences: list[Difference]  # per pair of methods (in the order of `comparisons`) and metric
    warnings: list[ReversedOrder | UninformativeJudge]


def _people(row: Mapping, field: str) -> float | None:
    """People's value of a reply for a figure: their mean total or dimension, their majority verdict x 100."""
    value = row.get(field)
    if value is None:
        return None
    return 100.0 * value if field == "verdict" else float(value)


def _judge(cell: Mapping, field: str) -> float | None:
    """The judge's value of a reply for a figure: its cell's total or dimension, its mean verdict x 100."""
    value = cell.get("binary" if field == "verdict" else field)
    if value is None:
        return None
    return 100.0 * value if field == "verdict" else float(value)


def strata(human: list[dict], replies: list[tuple[str, int, Mapping]], method: str,
           field: str) -> dict[int, Stratum]:
    """One method's rounds as calibration strata of a field ("total", "verdict" or a dimension key), with sessions:
    the judge's values of every reply of the method judged (`replies`: session, round and its metrics.reply_cells
    cell), people's and the judge's of those people rated too."""
    rated = {(r["session_id"], r["round"]): value for r in human
             if r["method"] == method and (value := _people(r, field)) is not None}
    judged: dict[int, list[tuple[str, float]]] = {}
    for session, rnd, cell in replies:
        if (value := _judge(cell, field)) is not None:
            judged.setdefault(rnd, []).append((session, value))
    out = {}
    for rnd in sorted(judged):
        every = sorted(judged[rnd])
        both = [(session, value, rated[(session, rnd)]) for session, value in every if (session, rnd) in rated]
        out[rnd] = Stratum([j for _s, j, _p in both], [p for _s, _j, p in both], [v for _s, v in every],
                           [s for s, _j, _p in both], [s for s, _v in every])
    return out


def _missing(reason: str) -> Estimate:
    """An estimate that cannot be made (no reply judged or rated for it), saying why."""
    return {"value": None, "low": None, "high": None, "n_rated": 0, "n_judged": 0, "weight": None, "se": None,
            "reason": reason}


def figure(rounds: list[Stratum], weighting: Weighting, confidence: float) -> Figure:
    """A figure three ways from its rounds' strata: the judge's, people's and calibrated."""
    if not rounds:
        return {"judge": _missing(calibration.NO_JUDGED), "people": _missing(calibration.TOO_FEW_RATED),
                "calibrated": _missing(calibration.TOO_FEW_RATED)}
    return {"judge": calibration.stratified_judge_mean(rounds, confidence, weighting),
            "people": calibration.stratified_people_mean(rounds, confidence, weighting),
            "calibrated": calibration.stratified_ppi_mean(rounds, confidence, weighting)}


def curve(rounds: dict[int, Stratum], confidence: float) -> Curve:
    """The calibrated AL(k): each round's PPI++ estimate with the AVG's lambda, when every round has enough ratings."""
    short = [(rnd, len(s.people_rated)) for rnd, s in rounds.items()
             if not calibration.enough_rated(len(s.people_rated), len(s.judge_all))]
    if short or not rounds:
        rnd, rated = short[0] if short else (None, None)
        return {"points": [], "reason": calibration.TOO_FEW_RATED, "round": rnd, "rated": rated}
    estimates = calibration.ppi_strata(list(rounds.values()), confidence, "equal")
    return {"points": [{"round": rnd, **estimate} for rnd, estimate in zip(rounds, estimates)],
            "reason": None, "round": None, "rated": None}


def _significant(estimate: Estimate) -> bool:
    """Whether an interval excludes 0."""
    low, high = estimate["low"], estimate["high"]
    return low is not None and high is not None and (low > 0 or high < 0)


def _warnings(methods: Mapping[str, MethodCalibration],
              differences: list[Difference]) -> list[ReversedOrder | UninformativeJudge]:
    """Reversed orders (per metric), then figures whose judge tells almost nothing of people, per method."""
    found: list[ReversedOrder | UninformativeJudge] = []
    for metric in COMPARED:
        figures = {m: f[metric] for m, f in methods.items() if metric in f}
        for a, b in calibration.reversed_orders({m: f["calibrated"] for m, f in figures.items()},
                                                {m: f["judge"] for m, f in figures.items()}):
            difference = next(d["calibrated"] for d in differences
                              if d["metric"] == metric and {d["a"], d["b"]} == {a, b})
            found.append({"code": "reversed_order", "metric": metric, "a": a, "b": b,
                          "calibrated": {m: figures[m]["calibrated"]["value"] for m in (a, b)},
                          "judge": {m: figures[m]["judge"]["value"] for m in (a, b)},
                          "significant": _significant(difference)})
    for method, figures_of in methods.items():
        for metric in COMPARED:
            estimate = figures_of[metric]["calibrated"] if metric in figures_of else None
            if estimate is not None and calibration.uninformative_judge(estimate):
                found.append({"code": "uninformative_judge", "metric": metric, "method": method,
                              "weight": estimate["weight"], "threshold": calibration.LOW_WEIGHT})
    return found


def calibration_block(human: list[dict], cells: Mapping[tuple, Mapping], methods: list[str],
                      dimensions: tuple[str, ...], has_binary: bool, rater: str, comparisons: list[Comparison],
                      confidence: float = calibration.DEFAULT_CONFIDENCE) -> Calibration:
    """The `calibration` block from people's ratings per reply (rating_store.human_ratings), the headline rater's
    values of each reply as its figures read them (metrics.reply_cells) and its `comparisons`."""
    asked = ("total", *(("verdict",) if has_binary else ()), *dimensions)
    gave = {field for row in human for field in asked if row.get(field) is not None}
    replies: dict[str, list[tuple[str, int, Mapping]]] = {m: [] for m in methods}
    for (session, rnd, method), cell in cells.items():
        if method in replies:
            replies[method].append((session, rnd, cell))
    rounds = {m: {field: strata(human, replies[m], m, field) for field in gave} for m in methods}
    per_method: dict[str, MethodCalibration] = {}
    for m in methods:
        mine: MethodCalibration = {}
        if "total" in gave:
            mine["avg"] = figure(list(rounds[m]["total"].values()), "equal", confidence)
            mine["al_curve"] = curve(rounds[m]["total"], confidence)
        if "verdict" in gave:
            mine["binary_rate"] = figure(list(rounds[m]["verdict"].values()), "judged", confidence)
        if gave & set(dimensions):
            mine["dimensions"] = {d: figure(list(rounds[m][d].values()), "judged", confidence)
                                  for d in dimensions if d in gave}
        per_method[m] = mine
    judged = {(c["a"], c["b"], c["metric"]): c for c in comparisons}
    differences: list[Difference] = []
    for a, b in combinations(methods, 2):
        for metric, field in RATED.items():
            if metric not in per_method[a]:
                continue
            first, second = list(rounds[a][field].values()), list(rounds[b][field].values())
            weighting: Weighting = "equal" if metric == "avg" else "judged"
            estimate = (calibration.ppi_difference(first, second, confidence, weighting) if first and second
                        else _missing(calibration.TOO_FEW_RATED))
            comparison = judged.get((a, b, COMPARED[metric]))
            differences.append({"a": a, "b": b, "metric": metric, "calibrated": estimate,
                                "judge": {"diff": comparison["diff"] if comparison else None,
                                          "ci95": comparison["ci95"] if comparison else None}})
    return {"rater": rater, "confidence": confidence, "min_rated": calibration.MIN_RATED, "methods": per_method,
            "differences": differences, "warnings": _warnings(per_method, differences)}
