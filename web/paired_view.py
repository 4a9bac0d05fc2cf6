"""Paired differences of compared runs against a chosen baseline, as the compare page, `/api/compare`,
paired.csv and `flask score --baseline` show them (the rows: benchmarks/pairing.py)."""
from __future__ import annotations

from typing import Mapping

from benchmarks import registry
from benchmarks.kind import Kind
from benchmarks.pairing import CORRECTIONS, paired_rows, regressions
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


def metric_of(kind: Kind, name: str | None) -> str:
    """The paired metric named `name` (default: the kind's first); PairedError listing the kind's metrics."""
    names = [m.name for m in kind.paired_metrics]
    if not names:
        raise PairedError(_("Runs of this kind compare distributions, not samples: no paired differences."))
    if name is None:
        return names[0]
    if name not in names:
        raise PairedError(_("Unknown metric %(name)s; the metrics of %(kind)s are: %(names)s.", name=name,
                             kind=kind.name, names=", ".join(names)))
    return name


def paired(runs: list[dict], baseline: str) -> list[dict]:
    """The paired rows of every other run against `baseline` (runs as web/compare.py's load_runs gives them)."""
    kind = registry.get(runs[0]["result"]["kind"])
    if not kind.paired_metrics:
        return []
    store, site = get_store(), get_site()
    samples = {run["id"]: list(kind.paired_samples(store.get_evaluation(run["id"]), site)) for run in runs}
    others = {run_id: s for run_id, s in samples.items() if run_id != baseline}
    return paired_rows(kind, samples[baseline], others)


def answer(runs: list[dict], baseline: str, correction: str = "holm", metric: str | None = None,
           max_drop: float | None = None) -> dict:
    """The `/api/compare` answer: baseline, runs, paired rows and whether a row of `metric` is a regression."""
    kind = registry.get(runs[0]["result"]["kind"])
    rows = paired(runs, baseline)
    chosen = metric_of(kind, metric) if kind.paired_metrics else None
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
