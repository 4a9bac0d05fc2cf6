"""How far a dialogue evaluation's judges agree: the `agreement` block of a panel's result, and self-consistency.

Units are replies (session, round, method). Krippendorff's alpha is interval for the fine total and each
dimension, nominal for the binary verdict; Spearman's rho (totals) and Cohen's kappa (verdicts) are given for each
pair of judges. Every figure has a 95% bootstrap interval that resamples whole sessions. A judge's verdict on a
reply is the majority of its samples (a tie is left out). kinds/agreement.py does the math.
"""
from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING, NotRequired, TypedDict

from common.lazy_modules import lazy
from kinds.agreement import Agreement, bootstrap_alpha, bootstrap_kappa, bootstrap_spearman, kendall_tau
from kinds.dialogue.metrics import MethodScores
from kinds.dialogue.prompts import DIMENSIONS
from kinds.stats import DEFAULT_N_BOOT

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy("numpy")  # loaded on first use: the app starts without numpy

N_BOOT = DEFAULT_N_BOOT  # replicates of each interval, as the metrics' intervals


class JudgePair(TypedDict):
    """How far two judges of a panel agree."""

    a: str
    b: str
    spearman: Agreement  # of their fine totals
    kappa: Agreement | None  # Cohen's, of their verdicts; None when the rubric asks no yes/no question
    method_tau: float | None  # Kendall's tau of the methods' AVG by each


class JudgesAgreement(TypedDict):
    """How far a panel's judges agree (the `agreement` block but people's figures)."""

    krippendorff_alpha: dict[str, Agreement]  # over all judges: "total", "binary" (with a yes/no question), each dimension
    pairs: list[JudgePair]
    significant: dict[str, list[list[str]]]  # each judge's significant comparisons after Holm: [a, b, metric]


class MethodConsistency(TypedDict):
    """How much one judge's repeated samples of a method's replies vary."""

    fine_sd: float | None  # the mean standard deviation (n-1) of the fine total, over replies with two samples or more
    fine_replies: int
    flip_rate: float | None  # the share of replies whose verdict flips between samples
    binary_replies: int
    dimension_sd: NotRequired[dict[str, float | None]]  # each dimension's, on its scale; rubrics other than the default


class Consistency(TypedDict):
    """Self-consistency of each judge asked several times."""

    samples: int  # how many times each judgment was asked
    by_judge: dict[str, dict[str, MethodConsistency]]  # judge -> method -> figures


def vote(binary: float | None) -> int | None:
    """A judge's verdict on a reply from the mean of its samples' verdicts: 1, 0, or None on a tie."""
    if binary is None or binary == 0.5:
        return None
    return int(binary > 0.5)


def _column(cells: dict, units: list, field: str) -> np.ndarray:
    values = [cells.get(unit, {}).get(field) for unit in units]
    if field == "binary":
        values = [vote(v) for v in values]
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def judges_agreement(labels: list[str], judge_cells: list[dict], method_docs: dict[str, dict[str, MethodScores]],
                     significant: dict[str, list[list[str]]], dimensions: tuple[str, ...] = DIMENSIONS,
                     binary: bool = True, n_boot: int = N_BOOT) -> JudgesAgreement:
    """Alpha over all judges, Spearman and kappa per pair of judges, and whether they rank the methods alike
    (Kendall's tau of the methods' AVG, and the method differences each judge finds significant after Holm).

    `judge_cells` are each judge's panel.cells(); `method_docs` each judge's per-method metrics by label;
    `significant` each judge's significant comparisons by label; `dimensions` the rubric's keys and `binary` whether
    it asks a yes/no question (without one, no alpha of verdicts and each pair's kappa is None)."""
    units = sorted(set().union(*judge_cells), key=str)
    sessions = [unit[0] for unit in units]
    columns = {field: [_column(cells, units, field) for cells in judge_cells]
               for field in ("total", *(("binary",) if binary else ()), *dimensions)}
    alpha = {field: bootstrap_alpha(np.column_stack(cols), sessions, "nominal" if field == "binary" else "interval",
                                    n_boot=n_boot)
             for field, cols in columns.items()}
    pairs: list[JudgePair] = []
    for i, j in combinations(range(len(labels)), 2):
        avgs = [[method_docs[label][m]["avg"] for m in method_docs[labels[0]]] for label in (labels[i], labels[j])]
        pairs.append({
            "a": labels[i], "b": labels[j],
            "spearman": bootstrap_spearman(columns["total"][i], columns["total"][j], sessions, n_boot=n_boot),
            "kappa": bootstrap_kappa(columns["binary"][i], columns["binary"][j], sessions, n_boot=n_boot)
            if binary else None,
            "method_tau": kendall_tau(*avgs),
        })
    return {"krippendorff_alpha": alpha, "pairs": pairs, "significant": significant}


def consistency(labels: list[str], judge_cells: list[dict], methods: list[str], samples: int,
                dimensions: tuple[str, ...] = ()) -> Consistency:
    """Self-consistency of each judge asked `samples` times: per method, the mean standard deviation (n-1) of the
    fine total over replies with at least two parsed samples, and the share of replies whose verdict flips
    between samples (of those with at least two); with `dimensions`, also the mean standard deviation of each
    dimension's score, on its own scale ("dimension_sd")."""
    out: Consistency = {"samples": samples, "by_judge": {}}
    for label, cells in zip(labels, judge_cells):
        per_method: dict[str, MethodConsistency] = {}
        for method in methods:
            mine = [c for (_idx, _sid, _rnd, m), c in cells.items() if m == method]
            spreads = [float(np.std(c["totals"], ddof=1)) for c in mine if len(c["totals"]) >= 2]
            flips = [len(set(c["verdicts"])) > 1 for c in mine if len(c["verdicts"]) >= 2]
            per_method[method] = {"fine_sd": float(np.mean(spreads)) if spreads else None, "fine_replies": len(spreads),
                                  "flip_rate": float(np.mean(flips)) if flips else None, "binary_replies": len(flips)}
            if dimensions:
                per_method[method]["dimension_sd"] = {d: _mean_sd([c["dimension_samples"][d] for c in mine])
                                                      for d in dimensions}
        out["by_judge"][label] = per_method
    return out


def _mean_sd(samples: list[list[float]]) -> float | None:
    """The mean standard deviation (n-1) of the replies' samples, over the replies with at least two."""
    spreads = [float(np.std(values, ddof=1)) for values in samples if len(values) >= 2]
    return float(np.mean(spreads)) if spreads else None
