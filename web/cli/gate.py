"""The CI gate of `flask --app app score`: --baseline prints the paired differences against a finished evaluation
and --fail-on-regression fails on a significant drop (kinds/paired_rows.py `is_regression`); --fail-below fails
when a method's headline value in the result document is below a threshold, or with --calibrated its figure
calibrated to the people's ratings --ratings attached (the result's `calibration` block) (docs/cli.md)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from kinds import registry
from kinds.calibration import MIN_RATED, NO_JUDGED, TOO_FEW_RATED
from kinds.kind import Kind, StartError, TakesRatings
from kinds.paired_rows import regressions
from translations import _, number
from web import get_store
from web.compare import COMPARABLE, load_runs
from web.paired_view import PairedError, paired, paired_metric

OPTIONS = [
    click.Option(["--baseline"], metavar="EVAL_ID",
                 help="A finished evaluation of the same kind: print the paired differences against it."),
    click.Option(["--fail-on-regression"], is_flag=True,
                 help="With --baseline: exit 1 when a method's paired difference of --metric is a regression."),
    click.Option(["--metric"], help="The paired metric the regression gate reads (default: the kind's first; dialogue: "
                                    "avg, binary_rate or a dimension key of the rubric)."),
    click.Option(["--max-drop"], type=float,
                 help="A regression is a drop significantly larger than this (default: significantly below 0)."),
    click.Option(["--fail-below"], multiple=True, metavar="METRIC=VALUE",
                 help="Exit 1 when a method's headline value of METRIC is below VALUE (repeatable)."),
    click.Option(["--ratings"], type=click.Path(exists=True, dir_okay=False, path_type=Path), metavar="FILE",
                 help="People's ratings (CSV or JSONL, as `ratings add` takes them), attached to the evaluation once "
                      "it is judged; it is then scored again."),
    click.Option(["--rater"], help="With --ratings: whose the rows without a rater column are (default: the file's "
                                   "name)."),
    click.Option(["--calibrated"], is_flag=True,
                 help="--fail-below reads each method's figure calibrated to the people's ratings of --ratings (its "
                      "value; its 95% interval is printed) instead of the judge's."),
]
# The per-method entries of a result document, by kind: dialogue's "methods", AgentBench's "agents".
ENTRIES = ("methods", "agents")


def _fail(message: str) -> NoReturn:
    click.echo(_("error: %(message)s", message=message), err=True)
    sys.exit(2)


def parse_thresholds(values: tuple[str, ...]) -> dict[str, float]:
    """{metric: value} from --fail-below METRIC=VALUE options; exit 2 on a malformed one."""
    thresholds = {}
    for text in values:
        name, sep, value = text.partition("=")
        try:
            thresholds[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            _fail(_("--fail-below takes METRIC=VALUE, such as avg=60; got %(text)s.", text=text))
    return thresholds


def check_ratings_options(ratings: Path | None, rater: str | None, calibrated: bool, thresholds: dict[str, float],
                          baseline: str | None, fail_on_regression: bool) -> None:
    """Exit 2 before anything is judged when --rater or --calibrated lacks what it needs, or --calibrated meets the
    paired gate."""
    if rater is not None and ratings is None:
        _fail(_("--rater needs --ratings."))
    if not calibrated:
        return
    if ratings is None:
        _fail(_("--calibrated gates on figures calibrated to people's ratings: give them with --ratings FILE."))
    if baseline is not None or fail_on_regression:
        _fail(_("--calibrated cannot be used with --baseline or --fail-on-regression: a calibrated figure rests on "
                "people's ratings of this run's own replies, so calibrated figures compare the methods within one "
                "run, and a baseline's rest on other ratings of other replies (no pairs). Gate each run on its "
                "calibrated figures with --fail-below."))
    if not thresholds:
        _fail(_("--calibrated gates with --fail-below METRIC=VALUE (such as avg=60): give at least one."))


def check_takes_ratings(kind: Kind, ratings: Path | None) -> None:
    """StartError when --ratings is given for a kind whose evaluations take no people's ratings."""
    if ratings is not None and not isinstance(kind, TakesRatings):
        takers: list[Kind] = registry.having(TakesRatings)
        raise StartError(_("--ratings: evaluations of kind %(kind)s take no people's ratings (those of %(kinds)s do).",
                           kind=kind.name, kinds=", ".join(k.name for k in takers) or "—"))


def check_baseline(baseline: str) -> None:
    """Exit 2 before any judging when the baseline evaluation does not exist or is not finished."""
    record = get_store().get_evaluation(baseline, with_result=False)
    if record is None:
        _fail(_("No evaluation has the id %(ids)s.", ids=baseline))
    elif record["status"] not in COMPARABLE:
        _fail(_("The baseline %(id)s has not finished (%(status)s).", id=baseline, status=record["status"]))


def check_kind(kind: Kind, baseline: str | None, metric: str | None, baseline_options: dict[str, object],
               baseline_kind: str | None = None, baseline_result: dict | None = None) -> None:
    """StartError when the baseline is of another kind (`baseline_kind`, else read from the store), the metric is
    not one of the paired metrics of the baseline's result (`baseline_result`, else read from the store; its kind's
    `paired_metrics_for`), or an option that reads the baseline (`baseline_options`, by flag) is given without one."""
    if baseline is not None:
        if baseline_kind is None:
            found = get_store().get_evaluation(baseline)
            if found is None:  # check_baseline() found it; deleted since
                raise StartError(_("No evaluation has the id %(ids)s.", ids=baseline))
            baseline_kind, baseline_result = found["kind"], found.get("result")
        if baseline_kind != kind.name:
            raise StartError(_("The baseline %(id)s is of kind %(other)s; this file is of kind %(kind)s.", id=baseline,
                               other=baseline_kind, kind=kind.name))
        try:
            paired_metric(kind, metric, [baseline_result] if baseline_result else [])
        except PairedError as exc:
            raise StartError(str(exc)) from None
    else:
        for option, value in baseline_options.items():
            if value not in (None, False):
                raise StartError(_("%(option)s needs --baseline.", option=option))


def headline_values(result: dict) -> dict[str, dict[str, float]]:
    """{method: {metric: value}}: the numbers of each method's (dialogue) or agent's (AgentBench) entry of the
    result document, its dimensions (dialogue) and its tasks' scores (AgentBench) among them."""
    entries: dict[str, dict] = next((result[key] for key in ENTRIES if isinstance(result.get(key), dict)), {})
    values: dict[str, dict[str, float]] = {}
    for name, entry in entries.items():
        flat = {k: v for k, v in entry.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        flat.update({k: v for k, v in (entry.get("dimensions") or {}).items() if isinstance(v, (int, float))})
        flat.update({k: t["score"] for k, t in (entry.get("tasks") or {}).items()
                     if isinstance(t, dict) and isinstance(t.get("score"), (int, float))})
        values[name] = flat
    return values


def _table(rows: list[dict]) -> str:
    """The paired rows as a plain-text table."""
    head = ("method", "metric", "baseline", "value", "diff", "95% CI", "p", "p_holm", "p_bh", "n_pairs", "test",
            "mdd")
    lines = [head] + [
        (row["method"], row["metric"], number(row["baseline_value"], 3), number(row["value"], 3),
         number(row["diff"], 3),
         f"[{number(row['ci95'][0], 3)}, {number(row['ci95'][1], 3)}]" if row["ci95"] else "—",
         number(row["p_value"], 4), number(row["p_holm"], 4), number(row["p_bh"], 4), str(row["n_pairs"]),
         row["test"], number(row["mdd"], 3)) for row in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines)


def run_gate(kind: Kind, record: dict, baseline: str | None, fail_on_regression: bool, metric: str | None,
             max_drop: float | None, thresholds: dict[str, float], calibrated: bool = False) -> bool:
    """Print the paired table against the baseline (stderr) and say whether the run fails the gate (with
    `calibrated`, --fail-below reads the calibrated figures)."""
    failed = False
    if baseline is not None:
        runs = load_runs([baseline, record["id"]])
        failed = report_paired(kind, paired(runs, baseline), baseline, fail_on_regression, metric, max_drop,
                               [run["result"] for run in runs])
    if calibrated:
        return check_calibrated(record["result"], thresholds) or failed
    return check_thresholds(record["result"], thresholds) or failed


def report_paired(kind: Kind, rows: list[dict], baseline: str, fail_on_regression: bool, metric: str | None,
                  max_drop: float | None, results: list[dict] | None = None) -> bool:
    """Print the paired rows against the baseline (stderr), and each regression of --metric (one of those the two
    runs with these `results` pair on) when the gate is on; whether there was one. Exit 2 when the runs do not pair
    on --metric (a dialogue run judged under another rubric than the baseline pairs on avg only)."""
    click.echo(_("Paired differences against %(id)s:", id=baseline), err=True)
    click.echo(_table(rows) if rows else _("These runs share no samples: no paired differences."), err=True)
    failed = False
    try:
        gated = paired_metric(kind, metric, results or []) if fail_on_regression else None
    except PairedError as exc:
        _fail(str(exc))
    for row in regressions(rows, gated, max_drop) if gated else []:
        click.echo(_("regression: %(method)s %(metric)s %(diff)s, 95%% CI [%(low)s, %(high)s]",
                     method=row["method"], metric=row["metric"], diff=number(row["diff"], 3),
                     low=number(row["ci95"][0], 3), high=number(row["ci95"][1], 3)), err=True)
        failed = True
    return failed


def check_thresholds(result: dict, thresholds: dict[str, float]) -> bool:
    """Print each headline value of the result below its --fail-below threshold (stderr); whether there was one.
    Exit 2 for a metric the result does not have."""
    failed = False
    if thresholds:
        values = headline_values(result)
        for name, threshold in thresholds.items():
            found = {m: v[name] for m, v in values.items() if name in v}
            if not found:
                known = sorted({k for v in values.values() for k in v})
                _fail(_("No headline value %(name)s in the result; it has: %(names)s.", name=name,
                        names=", ".join(known) or "—"))
            for method, value in found.items():
                if value < threshold:
                    click.echo(_("below threshold: %(method)s %(name)s %(value)s < %(threshold)s", method=method,
                                 name=name, value=number(value, 3), threshold=threshold), err=True)
                    failed = True
    return failed


def _calibrated_figures(result: dict) -> dict[str, dict[str, Any]]:
    """{method: {figure: {"judge", "people", "calibrated"}}}: the result's `calibration` block (its `methods`: avg,
    binary_rate and each dimension people rated), each figure's three estimates (kinds/calibration.py's Estimate); {}
    without one."""
    block = result.get("calibration")
    methods = block.get("methods") if isinstance(block, dict) else None
    if not isinstance(methods, dict):
        return {}
    return {method: {**{name: own[name] for name in ("avg", "binary_rate") if isinstance(own.get(name), dict)},
                     **(own.get("dimensions") or {})}
            for method, own in methods.items() if isinstance(own, dict)}


def _why_missing(estimate: dict | None) -> str:
    """Why a calibrated figure is missing, from its estimate's reason."""
    if not estimate:
        return _("the result has no calibrated estimate of it")
    reason = estimate.get("reason")
    if reason == TOO_FEW_RATED:
        return _("too few of its replies were rated: %(n)s in all, and each round needs at least %(min)s",
                 n=estimate.get("n_rated", 0), min=MIN_RATED)
    if reason == NO_JUDGED:
        return _("the judge scored none of its replies in a round")
    return _("no estimate (%(reason)s)", reason=reason or "—")


def check_calibrated(result: dict, thresholds: dict[str, float]) -> bool:
    """--fail-below on the calibrated figures: print each method's calibrated value of each METRIC with its 95%
    interval (stderr), and each one below its threshold or missing (with why); whether there was one. Exit 2 when
    the result has no calibrated figures, or none of that name."""
    figures = _calibrated_figures(result)
    if not figures:
        _fail(_("The result has no calibrated figures: people's ratings (--ratings) calibrate the figures of a kind "
                "that keeps them in its result's calibration block."))
    methods = list(result.get("methods") or figures)
    failed = False
    for name, threshold in thresholds.items():
        known = sorted({figure for own in figures.values() for figure in own})
        if name not in known:
            _fail(_("No calibrated figure %(name)s in the result; it has: %(names)s.", name=name,
                    names=", ".join(known) or "—"))
        for method in methods:
            estimate = (figures.get(method, {}).get(name) or {}).get("calibrated")
            if not estimate or estimate.get("value") is None:
                click.echo(_("no calibrated figure: %(method)s %(name)s: %(why)s", method=method, name=name,
                             why=_why_missing(estimate)), err=True)
                failed = True
                continue
            value = estimate["value"]
            low, high = estimate.get("low"), estimate.get("high")
            interval = f"[{number(low, 3)}, {number(high, 3)}]" if low is not None and high is not None else "—"
            click.echo(_("calibrated: %(method)s %(name)s %(value)s, 95%% CI %(interval)s (%(rated)s replies rated "
                         "of %(judged)s judged)", method=method, name=name, value=number(value, 3), interval=interval,
                         rated=estimate.get("n_rated"), judged=estimate.get("n_judged")), err=True)
            if value < threshold:
                click.echo(_("below threshold: %(method)s %(name)s (calibrated) %(value)s < %(threshold)s",
                             method=method, name=name, value=number(value, 3), threshold=threshold), err=True)
                failed = True
    return failed
