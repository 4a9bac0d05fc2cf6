"""Paired differences of compared runs against a chosen baseline, as the compare page, `/api/compare`,
paired.csv and `flask score --baseline` show them (the rows: kinds/paired_rows.py)."""
from __future__ import annotations

from typing import Mapping

from kinds import registry
from kinds.kind import Kind, Metric, Paired
from kinds.paired_rows import CORRECTIONS, paired_rows, regressions
from translations import _
from web import get_site, get_store


class PairedError(ValueError):
    """A choice of baseline, correction or metric that cannot be answered, with a message for the user."""


CSV_COLUMNS = ("run", "method", "metric", "baseline_value", "value", "diff", "ci95_low", "ci95_high", "p_value",
               "p_holm", "p_bh", "n_pairs", "test", "mdd")


def earliest(ids: list[str]) -> str | None:
    """The earliest created of the evaluations `ids` (None when none exists): the default baseline."""
    return next(iter(get_store().in_creation_order(ids)), None)


def choose_baseline(ids: list[str], args: Mapping) -> str:
    """The `baseline` of the query string, else the earliest created of the evaluations `ids` (so "old run, new run"
    reads new minus old, whatever order they were ticked in); PairedError when it is not one of the ids."""
    baseline = (args.get("baseline") or "").strip() or earliest(ids) or ""
    if baseline not in ids:
        raise PairedError(_("The baseline %(id)s is not one of the compared evaluations.", id=baseline))
    return baseline


def choose_correction(args: Mapping) -> str:
    """The `correction` of the query string, holm (default) or bh; PairedError otherwise."""
    correction = (args.get("correction") or "holm").strip()
    if correction not in CORRECTIONS:
        raise PairedError(_("Unknown correction %(name)s: use holm or bh.", name=correction))
    return correction


def metrics_of(runs: list[dict]) -> tuple[Metric, ...]:
    """The metrics the runs (as web/compare.py's load_runs gives them) pair on: their kind's for their results."""
    kind = registry.get(runs[0]["result"]["kind"])
    return kind.paired_metrics_for([run["result"] for run in runs]) if isinstance(kind, Paired) else ()


def paired_metric(kind: Kind, name: str | None, results: list[dict]) -> str:
    """The metric named `name` (default: the first) among those runs with these result documents pair on
    (`Paired.paired_metrics_for`); PairedError saying so when a run has it but they do not pair on it (dialogue runs
    judged under different rubrics), listing the metrics otherwise; and when runs of the kind do not pair at all."""
    if not isinstance(kind, Paired):
        raise PairedError(_("Runs of this kind compare distributions, not samples: no paired differences."))
    metrics = kind.paired_metrics_for(results)
    try:
        return metric_of(kind, name, metrics)
    except PairedError:
        if name is not None and any(name in {m.name for m in kind.paired_metrics_for([result])}
                                    for result in results):
            raise PairedError(_("These runs do not pair on %(name)s; they pair on: %(names)s.", name=name,
                                names=", ".join(m.name for m in metrics))) from None
        raise


def metric_of(kind: Paired, name: str | None, metrics: tuple[Metric, ...] | None = None) -> str:
    """The paired metric named `name` among `metrics` (default: the kind's `paired_metrics`), by default the first;
    PairedError listing them otherwise."""
    names = [m.name for m in (kind.paired_metrics if metrics is None else metrics)]
    if name is None:
        return names[0]
    if name not in names:
        raise PairedError(_("Unknown metric %(name)s; the metrics of %(kind)s are: %(names)s.", name=name,
                             kind=kind.name, names=", ".join(names)))
    return name


def paired(runs: list[dict], baseline: str) -> list[dict]:
    """The paired rows of every other run against `baseline` (runs as web/compare.py's load_runs gives them)."""
    kind = registry.get(runs[0]["result"]["kind"])
    if not isinstance(kind, Paired):
        return []
    store, site = get_store(), get_site()
    samples = {}
    for run in runs:  # one result document in memory at a time
        record = store.get_evaluation(run["id"])
        if record is None:  # deleted since load_runs read it
            raise PairedError(_("No evaluation has the id %(ids)s.", ids=run["id"]))
        samples[run["id"]] = list(kind.paired_samples(record, site))
    others = {run_id: s for run_id, s in samples.items() if run_id != baseline}
    return paired_rows(kind, samples[baseline], others, metrics=metrics_of(runs))


def answer(runs: list[dict], baseline: str, correction: str = "holm", metric: str | None = None,
           max_drop: float | None = None) -> dict:
    """The `/api/compare` answer: baseline, runs, paired rows and whether a row of `metric` is a regression."""
    kind = registry.get(runs[0]["result"]["kind"])
    rows = paired(runs, baseline)
    chosen = paired_metric(kind, metric, [run["result"] for run in runs]) if isinstance(kind, Paired) else None
    return {"baseline": baseline,
            "runs": [{"id": run["id"], "label": run["label"], "filename": run["filename"], "model": run["model"],
                      "finished_at": run["finished_at"]} for run in runs],
            "paired": rows,
            "regression": bool(chosen and regressions(rows, chosen, max_drop, correction))}


def csv_rows(rows: list[dict]) -> list[tuple]:
    """The paired rows as CSV_COLUMNS (the interval as two columns)."""
    return [(row["run"], row["method"], row["metric"], row["baseline_value"], row["value"], row["diff"],
             *(row["ci95"] or (None, None)), row["p_value"], row["p_holm"], row["p_bh"], row["n_pairs"], row["test"],
             row["mdd"]) for row in rows]
