"""Two runs of one kind, sample by sample: which samples pair up (the same method and key in both runs).

Kinds give their samples through `Paired.paired_samples`; the math of the differences is in kinds/paired_stats.py.
`paired_rows` makes the table of paired differences the compare page, the API, paired.csv and `flask score
--baseline` show; `is_regression` is the CI gate's rule (docs/reviewing-and-comparing.md).
"""
from __future__ import annotations

from typing import Iterable, Mapping

from kinds.kind import Metric, Paired, Sample
from kinds.paired_stats import PairedScores, PairedVerdicts, paired_scores, paired_verdicts, with_adjusted
from kinds.stats import DEFAULT_N_BOOT


def align(baseline: Iterable[Sample], other: Iterable[Sample]) -> list[tuple[Sample, Sample]]:
    """The samples both runs have, as (baseline's, other's) pairs in the baseline's order; a key seen twice in one run
    counts once (its first sample)."""
    theirs: dict[tuple, Sample] = {}
    for sample in other:
        theirs.setdefault((sample.method, sample.key), sample)
    pairs, seen = [], set()
    for sample in baseline:
        ident = (sample.method, sample.key)
        if ident in theirs and ident not in seen:
            seen.add(ident)
            pairs.append((sample, theirs[ident]))
    return pairs


# The bootstrap's seed: fixed, so that the page, the API, the CSV and the CLI give the same intervals every time.
SEED = 0
CORRECTIONS = ("holm", "bh")
SIGNIFICANCE = 0.05


def _is_binary(values: Iterable[float | None]) -> bool:
    """Whether every present value is 0 or 1 (a fractional cell mean is not)."""
    return all(v in (0, 1) for v in values if v is not None)


def metric_row(metric: Metric, pairs: list[tuple[Sample, Sample]], n_boot: int = DEFAULT_N_BOOT,
               seed: int = SEED) -> dict | None:
    """The paired difference of one metric over one method's pairs (pairs missing either value left out), on the
    result document's scale and by its definition (`Metric`); None without a complete pair."""
    complete = [(a, b) for a, b in pairs
                if a.values.get(metric.name) is not None and b.values.get(metric.name) is not None]
    if not complete:
        return None
    base = [a.values[metric.name] for a, _ in complete]
    other = [b.values[metric.name] for _, b in complete]
    clusters = [a.cluster for a, _ in complete]
    strata = [a.stratum for a, _ in complete] if metric.per_stratum else None
    figures: PairedScores | PairedVerdicts
    if metric.binary and _is_binary(base) and _is_binary(other):
        figures = paired_verdicts(base, other, clusters, n_boot=n_boot, seed=seed, strata=strata)
    else:  # scores, and verdicts that are cell means (repeated samples or a panel disagreeing)
        figures = paired_scores(base, other, clusters, n_boot=n_boot, seed=seed, strata=strata)
    return {"method": complete[0][0].method, "metric": metric.name,
            "baseline_value": _scaled(figures.baseline_value, metric), "value": _scaled(figures.value, metric),
            "diff": _scaled(figures.diff, metric), "ci95": _scaled(figures.ci95, metric),
            "p_value": figures.p_value, "n_pairs": figures.n_pairs, "test": figures.test,
            "mdd": _scaled(figures.mdd, metric)}


def _scaled(figure, metric: Metric):
    """A figure (or an interval) times the metric's scale; None stays None."""
    if figure is None or metric.scale == 1:
        return figure
    return [v * metric.scale for v in figure] if isinstance(figure, list) else figure * metric.scale


def paired_rows(kind: Paired, baseline: Iterable[Sample], runs: Mapping[str, Iterable[Sample]],
                n_boot: int = DEFAULT_N_BOOT, seed: int = SEED, metrics: tuple[Metric, ...] | None = None) -> list[dict]:
    """Every other run against the baseline: per run, per method both have, a row per paired metric (`metrics`, by
    default the kind's `paired_metrics`; `Paired.paired_metrics_for` gives those of given runs), then the kind's
    `paired_aggregates`, with Holm and Benjamini-Hochberg p-values adjusted over all the rows."""
    baseline = list(baseline)
    rows = []
    for run_id, samples in runs.items():
        pairs = align(baseline, samples)
        by_method: dict[str, list[tuple[Sample, Sample]]] = {}
        for pair in pairs:
            by_method.setdefault(pair[0].method, []).append(pair)
        for method_pairs in by_method.values():
            for metric in kind.paired_metrics if metrics is None else metrics:
                row = metric_row(metric, method_pairs, n_boot, seed)
                if row is not None:
                    rows.append({"run": run_id, **row})
        if pairs:
            rows += [{"run": run_id, **row} for row in kind.paired_aggregates(pairs)]
    return with_adjusted(rows)


def is_regression(row: dict, max_drop: float | None = None, correction: str = "holm") -> bool:
    """Whether a paired row is a significant drop: its CI's upper bound is below -max_drop (below 0 without it) and,
    when it has a p-value, its corrected p-value ("p_holm" or "p_bh") is below 0.05. A difference that is the same
    on every pair has no p-value and the CI [d, d]: it is a regression when d is below the bound."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
    if row.get("ci95") is None:
        return False
    bound = -max_drop if max_drop is not None else 0.0
    if not row["ci95"][1] < bound:
        return False
    corrected = row.get(f"p_{correction}")
    return row.get("p_value") is None or (corrected is not None and corrected < SIGNIFICANCE)


def regressions(rows: Iterable[dict], metric: str, max_drop: float | None = None,
                correction: str = "holm") -> list[dict]:
    """The rows of `metric` that are regressions (`is_regression`)."""
    return [row for row in rows if row["metric"] == metric and is_regression(row, max_drop, correction)]
