"""Every number of the dialogue kind's methods (docs/metrics.md#dialogue): AL(k) curves, binary rates, CIs, comparisons.

The supplementary analyses have modules of their own (README.md lists them): length_bias.py, judge_agreement.py,
human_agreement.py, pairwise_mode.py and panel.py.

Choices the design leaves open:
- A judgment counts only when its status is "ok" and its value is valid (fine: total a finite
  number in 0..100; binary: verdict 0 or 1, or in between for a judge panel's tie, see panel.py). An "ok"
  judgment without a valid value is counted as unparsed, never replaced by a default.
- If a (session, round, method, mode) cell has several valid judgments, F(s,k) / B(s,k) is their
  mean, so every session weighs the same in AL(k) and BAR(k).
- Bootstraps resample sessions in sorted session-id order, so results do not depend on the order
  of the records.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, NotRequired, TypedDict

from common.lazy_modules import lazy
from kinds import stats
from kinds.comparisons import holm
from kinds.dialogue.prompts import DIMENSIONS
from kinds.dialogue.records import Table, table_of
from kinds.groups import group_means, grouped, nan_mean

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")  # loaded when a dialogue result is first scored, not when the app starts

REQUIRED_COLUMNS = ("session", "round", "method", "mode", "status")
HOLM_ALPHA = 0.05  # family-wise error rate of the pairwise method differences of one metric


class CurvePoint(TypedDict):
    """One round k of a curve: the mean over the sessions that have round k, and their number."""

    round: int
    value: float
    n: int
    # AL(k)'s and BAR(k)'s: the 95% bootstrap interval over sessions (None with fewer than 2); the dimension curves'
    # points have none
    ci95: NotRequired[list[float] | None]


class NormalisedPoint(TypedDict):
    """One round of a min-max normalised curve."""

    round: int
    value: float


class CurveStatistics(TypedDict):
    """What a curve says (curve_statistics); None where a number does not exist."""

    avg: float | None
    slope: float | None
    intercept: float | None
    r2: float | None
    normalised: list[float]  # the curve min-max normalised to [0, 1]
    n_ir: float | None  # the normalised curve's slope
    n_r2: float | None


class Intervals(TypedDict):
    """95% bootstrap intervals over sessions (None with fewer than 2)."""

    avg: list[float] | None
    binary_rate: list[float] | None


class MethodScores(TypedDict):
    """One method's metrics (docs/metrics.md#dialogue); a figure that does not exist is None."""

    al_curve: list[CurvePoint]  # AL(k): the mean fine score by round
    avg: float | None  # AVG: the mean of AL(k)
    slope: float | None
    intercept: float | None
    r2: float | None
    n_al_curve: list[NormalisedPoint]
    n_ir: float | None
    n_r2: float | None
    binary_curve: list[CurvePoint] | None  # BAR(k); None when the rubric asks no yes/no question
    # the yes/no question's figures (None when the rubric asks none): the rate of all verdicts x 100, then those of
    # BAR(k) as curve_statistics gives them
    binary_rate: float | None
    binary_avg: float | None
    binary_slope: float | None
    binary_intercept: float | None
    binary_r2: float | None
    binary_n_ir: float | None
    binary_n_r2: float | None
    dimensions: dict[str, float | None]  # each dimension of the rubric: its mean, on its own scale
    ci95: Intervals
    sessions: int  # sessions with a valid judgment
    judged: int  # valid judgments: fine and binary, then each
    judged_fine: int
    judged_binary: int
    unparsed: int  # answers that did not parse, or parsed to an invalid value
    failed: int
    pending: int
    dimension_curves: NotRequired[dict[str, list[CurvePoint]]]  # each dimension's mean by round; rubrics other
    # than the default only


class Comparison(TypedDict):
    """The paired difference a - b of two methods' per-session means, over the sessions both have."""

    a: str
    b: str
    metric: str  # "fine" (the fine score), or "binary" (the keep-chatting rate, x 100)
    diff: float | None
    ci95: list[float] | None  # bootstrap over the sessions
    significant: bool  # the interval excludes 0
    sessions: int
    p_value: float | None  # paired t-test
    p_holm: float | None  # after Holm's correction over the pairs of methods of this metric
    significant_holm: bool  # p_holm <= HOLM_ALPHA


def curve_statistics(rounds: list[int], values: list[float]) -> CurveStatistics:
    """Summarise a curve: mean, OLS slope/intercept/R2, min-max normalised curve, its slope/R2."""
    fit = stats.ols(rounds, values)
    normalised = stats.min_max_normalise(values)
    n_fit = stats.ols(rounds, normalised)
    return {
        "avg": stats.as_float(np.mean(values)) if values else None,
        "slope": fit.slope,
        "intercept": fit.intercept,
        "r2": fit.r2,
        "normalised": normalised,
        "n_ir": n_fit.slope,
        "n_r2": n_fit.r2,
    }


RECORD_TEXT = ("session", "session_id", "method", "mode", "status")  # the text fields of records given as dicts


def _table(records: Iterable[dict] | Table, value_columns: tuple[str, ...]) -> Table:
    """The records as a Table (records.judgment_table's, used as it is, or dicts), their value columns floats."""
    if isinstance(records, Table):
        return records
    records = list(records)
    missing = [c for c in REQUIRED_COLUMNS if records and not all(c in r for r in records)]
    if missing:
        raise ValueError(f"records lack required fields: {', '.join(missing)}")
    return table_of(records, REQUIRED_COLUMNS + value_columns, text=RECORD_TEXT)


def _valid_mask(table: Table) -> np.ndarray:
    total, verdict = table["total"], table["verdict"]
    fine = table["mode"].equals("fine") & (total >= 0) & (total <= 100)
    binary = table["mode"].equals("binary") & (verdict >= 0) & (verdict <= 1)
    return table["status"].equals("ok") & (fine | binary)


@dataclass(frozen=True)
class Cells:
    """Values per (session, round), sorted by session then round: sessions as codes into the table's session texts."""

    session: np.ndarray
    round: np.ndarray
    value: np.ndarray

    def __len__(self) -> int:
        return len(self.value)

    def valued(self) -> Cells:
        """The cells that have a value."""
        keep = ~np.isnan(self.value)
        return Cells(self.session[keep], self.round[keep], self.value[keep])


def _cells(judgments: Table, column: str) -> Cells:
    """Mean value per (session, round), sorted by session then round."""
    groups, (sessions, rounds) = grouped([judgments["session"].codes, judgments["round"]])
    means, _counts = group_means(groups, judgments[column], len(sessions))
    return Cells(sessions, rounds, means)


def _session_matrix(cells: Cells) -> tuple[np.ndarray, np.ndarray]:
    """Turn (session, round) cells into S x K value and 0/1 count matrices (sorted sessions)."""
    _, session_codes = np.unique(cells.session, return_inverse=True)
    round_values, round_codes = np.unique(cells.round, return_inverse=True)
    shape = (int(session_codes.max()) + 1, len(round_values))
    sums = np.zeros(shape)
    counts = np.zeros(shape)
    sums[session_codes, round_codes] = cells.value
    counts[session_codes, round_codes] = 1.0
    return sums, counts


def round_curve(cells: Cells, scale: float) -> tuple[list[CurvePoint], CurveStatistics]:
    """AL(k) (scale 1, fine cells) or BAR(k) (scale 100, binary cells): per round k, the mean over sessions of the
    (session, round) cells with their number, and the curve_statistics of those means."""
    round_values, groups = np.unique(cells.round, return_inverse=True)
    means, counts = group_means(groups, cells.value, len(round_values))
    rounds = [int(k) for k in round_values]
    values = [float(v) * scale for v in means]
    points: list[CurvePoint] = [{"round": k, "value": v, "n": int(n)} for k, v, n in zip(rounds, values, counts)]
    return points, curve_statistics(rounds, values)


class _WeightCache:
    """Bootstrap weight matrices by number of sessions, built once per scoring call."""

    def __init__(self, n_boot: int, seed: int):
        self.n_boot, self.seed = n_boot, seed
        self._cache: dict[int, np.ndarray] = {}

    def get(self, n: int) -> np.ndarray | None:
        if n < 2:
            return None
        if n not in self._cache:
            self._cache[n] = stats.resample_weights(n, self.n_boot, self.seed)
        return self._cache[n]


def bootstrap_mean_ci(sums: np.ndarray, counts: np.ndarray, scale: float, weights: _WeightCache) -> list[float] | None:
    """95% CI of AVG (or of the binary rate): percentile interval of the mean over sessions' resamples, x scale."""
    ci = stats.bootstrap_curve_mean_ci(sums, counts, weights=weights.get(sums.shape[0]))
    return None if ci is None else [v * scale for v in ci]


def add_round_cis(points: list[CurvePoint], sums: np.ndarray, counts: np.ndarray, scale: float,
                  weights: _WeightCache) -> None:
    """Give every curve point its 95% bootstrap interval over sessions (None with fewer than 2)."""
    w = weights.get(sums.shape[0])
    cis = stats.bootstrap_column_means_ci(sums, counts, weights=w) if w is not None else [None] * len(points)
    # Both the points and the matrix columns are the rounds with data, in ascending order.
    for point, ci in zip(points, cis):
        point["ci95"] = None if ci is None else [v * scale for v in ci]


def dimension_means(fine: Table, dimensions: tuple[str, ...] = DIMENSIONS) -> dict[str, float | None]:
    """Each dimension's mean over the replies (a reply's value: the mean of its valid fine judgments), so that, as in
    AL(k), a reply judged several times weighs the same as one judged once."""
    groups, (replies, _rounds) = grouped([fine["session"].codes, fine["round"]], sort=False)
    return {d: stats.as_float(nan_mean(group_means(groups, fine[d], len(replies))[0])) for d in dimensions}


def reply_cells(records: Iterable[dict] | Table,
                dimensions: tuple[str, ...] = DIMENSIONS) -> dict[tuple, dict[str, float | None]]:
    """Each reply's values as the methods' figures read them, keyed (session, round, method): the mean of its valid
    fine totals and dimensions ("total", each key) and of its valid verdicts ("binary", in [0, 1]; a panel's tie
    counts 0.5); None for a value it lacks."""
    table = _table(records, ("total", "verdict") + tuple(dimensions))
    valid = _valid_mask(table)
    found: dict[tuple, dict[str, float | None]] = {}
    for mode, columns in (("fine", ("total", *dimensions)), ("binary", ("verdict",))):
        rows = table.rows(valid & table["mode"].equals(mode))
        groups, keys = grouped([rows["session"].codes, rows["round"], rows["method"].codes], sort=False)
        means = {column: group_means(groups, rows[column], len(keys[0]))[0].tolist() for column in columns}
        sessions, methods = rows["session"].names, rows["method"].names
        for n, (session, rnd, method) in enumerate(zip(*(k.tolist() for k in keys))):
            cell = found.setdefault((sessions[session], rnd, methods[method]),
                                    {"total": None, "binary": None, **{d: None for d in dimensions}})
            for column in columns:
                cell["binary" if column == "verdict" else column] = stats.as_float(means[column][n])
    return found


class _Judgments:
    """One method's valid fine and binary judgments and their (session, round) cells."""

    def __init__(self, rows: Table, valid: np.ndarray):
        self.rows = rows
        self.valid = valid
        self.fine = rows.rows(valid & rows["mode"].equals("fine"))
        self.binary = rows.rows(valid & rows["mode"].equals("binary"))
        self.fine_cells = _cells(self.fine, "total")
        self.binary_cells = _cells(self.binary, "verdict")

    def session_means(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per-session mean of F and of 100*B: the sessions (sorted codes) and their means."""
        return {"fine": _session_means(self.fine_cells, 1.0), "binary": _session_means(self.binary_cells, 100.0)}


def _session_means(cells: Cells, scale: float) -> tuple[np.ndarray, np.ndarray]:
    sessions, groups = np.unique(cells.session, return_inverse=True)
    return sessions, group_means(groups, cells.value, len(sessions))[0] * scale


def _method_result(j: _Judgments, weights: _WeightCache, dimensions: tuple[str, ...], binary: bool = True,
                   dimension_curves: bool = False) -> MethodScores:
    al_curve, al = round_curve(j.fine_cells, 1.0)
    bar_curve, bar = round_curve(j.binary_cells, 100.0)

    avg_ci = rate = rate_ci = None
    if len(j.fine_cells):
        sums, counts = _session_matrix(j.fine_cells)
        avg_ci = bootstrap_mean_ci(sums, counts, 1.0, weights)
        add_round_cis(al_curve, sums, counts, 1.0, weights)
    if len(j.binary_cells):
        sums, counts = _session_matrix(j.binary_cells)
        add_round_cis(bar_curve, sums, counts, 100.0, weights)
        rate = binary_rate(j.binary_cells)
        # The binary rate pools all B(s,k): one column of per-session sums and counts.
        rate_ci = bootstrap_mean_ci(sums.sum(axis=1), counts.sum(axis=1), 100.0, weights)

    status = j.rows["status"]
    sessions = np.union1d(j.fine["session"].codes, j.binary["session"].codes)
    document: MethodScores = {
        "al_curve": al_curve,
        "avg": al["avg"],
        "slope": al["slope"],
        "intercept": al["intercept"],
        "r2": al["r2"],
        "n_al_curve": [
            {"round": p["round"], "value": v} for p, v in zip(al_curve, al["normalised"])
        ],
        "n_ir": al["n_ir"],
        "n_r2": al["n_r2"],
        "binary_curve": bar_curve if binary else None,
        "binary_rate": rate,
        "binary_avg": bar["avg"],
        "binary_slope": bar["slope"],
        "binary_intercept": bar["intercept"],
        "binary_r2": bar["r2"],
        "binary_n_ir": bar["n_ir"],
        "binary_n_r2": bar["n_r2"],
        "dimensions": dimension_means(j.fine, dimensions),
        "ci95": {"avg": avg_ci, "binary_rate": rate_ci},
        "sessions": len(sessions),
        "judged": len(j.fine) + len(j.binary),
        "judged_fine": len(j.fine),
        "judged_binary": len(j.binary),
        "unparsed": int(status.equals("unparsed").sum() + (status.equals("ok") & ~j.valid).sum()),
        "failed": int(status.equals("failed").sum()),
        "pending": int(status.equals("pending").sum()),
    }
    if dimension_curves:
        document["dimension_curves"] = {d: round_curve(_cells(j.fine, d).valued(), 1.0)[0] for d in dimensions}
    return document


def binary_rate(binary_cells: Cells) -> float:
    """Binary rate = 100 x the mean of all B(s,k) (every session's every round)."""
    return 100.0 * nan_mean(binary_cells.value)


def method_comparisons(per_method: dict, methods: list[str], weights: _WeightCache,
                       metrics: tuple[str, ...] = ("fine", "binary")) -> list[Comparison]:
    """Per pair of methods (a, b) and metric (fine, and binary when the rubric asks a yes/no question): the mean
    difference a - b of per-session means over the sessions both have, its bootstrap CI, its paired t-test p-value
    and that p-value after Holm's correction."""
    out: list[Comparison] = []
    for a, b in combinations(methods, 2):
        for metric in metrics:
            (left, left_means), (right, right_means) = per_method[a][metric], per_method[b][metric]
            both, at_left, at_right = np.intersect1d(left, right, assume_unique=True, return_indices=True)
            result = stats.paired_difference(left_means[at_left], right_means[at_right], weights=weights.get(len(both)))
            out.append(
                {
                    "a": a,
                    "b": b,
                    "metric": metric,
                    "diff": result.diff,
                    "ci95": result.ci95,
                    "significant": result.significant,
                    "sessions": result.n,
                    "p_value": result.p_value,
                    "p_holm": None,  # set below, once the family is known
                    "significant_holm": False,
                }
            )
    # Holm's correction over the method pairs of each metric: with many methods some CIs exclude 0 by chance.
    for metric in metrics:
        family = [c for c in out if c["metric"] == metric]
        for c, adjusted in zip(family, holm([c["p_value"] for c in family])):
            c["p_holm"] = adjusted
            c["significant_holm"] = adjusted is not None and adjusted <= HOLM_ALPHA
    return out


def score_methods(
    records: Iterable[dict] | Table,
    methods: list[str],
    n_boot: int = stats.DEFAULT_N_BOOT,
    seed: int = stats.DEFAULT_SEED,
    dimensions: tuple[str, ...] = DIMENSIONS,
    binary: bool = True,
    dimension_curves: bool = False,
) -> tuple[dict[str, MethodScores], list[Comparison]]:
    """Score judgments into per-method metrics (docs/result-documents.md) and pairwise comparisons; `dimensions` are
    the rubric's keys, `binary` whether it asks a yes/no question (without one the binary figures are null and only
    the fine scores are compared), `dimension_curves` whether each dimension's mean by round is given too."""
    value_columns = ("total", "verdict") + tuple(dimensions)
    table = _table(records, value_columns)
    valid_all = _valid_mask(table)
    weights = _WeightCache(n_boot, seed)
    results: dict[str, MethodScores] = {}
    session_means = {}
    columns = table.only(*REQUIRED_COLUMNS, *value_columns)
    for name in methods:  # one method's rows at a time: a copy of a method's judgments, not of all of them
        mine = table["method"].equals(name)
        judgments = _Judgments(columns.rows(mine), valid_all[mine])
        results[name] = _method_result(judgments, weights, tuple(dimensions), binary, dimension_curves)
        session_means[name] = judgments.session_means()
    return results, method_comparisons(session_means, list(methods), weights, ("fine", "binary") if binary else ("fine",))
