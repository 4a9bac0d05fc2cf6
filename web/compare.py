"""The compare page: two or more finished evaluations of one kind side by side.

`GET /compare?ids=a,b` (or `?ids=a&ids=b`): the kind's `compare(runs)` fills its `<kind>/compare.html` (for
dialogue: the merged table, the overlaid AL(k) and BAR(k) curves and the differences between runs of the same
method). Without ids the page offers the finished evaluations to pick from, a page at a time, searched as the list
of evaluations is (web/run_list.py: `q`, `kind`, `tag`, `sort`, `page`, ...). Every table of differences on the page
measures from one baseline: `?baseline=<id>`, by default the earliest created of the runs (web/paired_view.py), each
run marked `baseline` (true or false) for the kind's template. Below, the paired differences with
`?correction=holm|bh`; `/compare/paired.csv` has the same rows.
"""
from __future__ import annotations

from typing import Mapping

from flask import Blueprint, Flask, Response, render_template, request

from kinds import registry
from kinds.figures import MAX_RUNS
from kinds.host import csv_response
from kinds.kind import Paired, Scored, list_arg
from pipeline import provenance
from translations import _, status_label
from web import get_store, paired_view, run_list
from web.run_labels import run_labels

bp = Blueprint("compare", __name__)
MAX_EVALUATIONS = MAX_RUNS
SHORT_ID = 6
COMPARABLE = ("done", "incomplete")  # finished with every judgment asked (an incomplete one's failures are shown)


class CompareError(ValueError):
    """A request the compare page cannot answer, with a message for the user."""


def register(app: Flask, csrf=None) -> None:
    """Register the compare page (it only reads, so there is nothing to exempt from CSRF)."""
    app.register_blueprint(bp)


def requested_ids(args: Mapping) -> list[str]:
    """Evaluation ids from `ids=a,b` and/or `ids=a&ids=b`, in order, without blanks and repeats."""
    return [i[:64] for i in list_arg(args, "ids")]


def load_runs(ids: list[str]) -> list[dict]:
    """The evaluations to compare with their result documents and labels (by what tells them apart: run_labels);
    CompareError when they cannot be."""
    if len(ids) < 2:
        raise CompareError(_("Choose at least two finished evaluations to compare."))
    if len(ids) > MAX_EVALUATIONS:
        raise CompareError(_("Compare at most %(n)s evaluations at a time.", n=MAX_EVALUATIONS))
    store = get_store()
    found = {i: store.get_evaluation(i) for i in ids}
    records = {i: record for i, record in found.items() if record is not None}
    unknown = [i for i in found if i not in records]
    if unknown:
        raise CompareError(_("No evaluation has the id %(ids)s.", ids=", ".join(unknown)))
    kinds = {record["kind"] for record in records.values()}
    if len(kinds) > 1:
        raise CompareError(_("Compare evaluations of one kind at a time; these are of kinds %(kinds)s.",
                             kinds=", ".join(sorted(kinds))))
    unfinished = [f"{i} ({status_label(record['status'])})" for i, record in records.items()
                  if record["status"] not in COMPARABLE or not record.get("result")]
    if unfinished:
        raise CompareError(_("Only finished evaluations can be compared; not finished: %(ids)s.",
                             ids=", ".join(unfinished)))
    runs = []
    for evaluation_id in ids:
        record = records[evaluation_id]
        result = record["result"]
        upload = store.get_upload(record["upload_id"])
        record["filename"] = upload["filename"] if upload else result["input"]["filename"]
        runs.append({"id": evaluation_id, "short_id": evaluation_id[:SHORT_ID], "filename": record["filename"],
                     "model": registry.scored(record["kind"]).run_label(result),
                     "finished_at": record["finished_at"], "result": result})
    for run, label in zip(runs, run_labels([records[i] for i in ids])):
        run["label"] = label
    return runs


def picker(args: Mapping[str, str]) -> dict:
    """What the picker shows: a page of the finished evaluations the search in `args` matches (web/run_list.py's
    parameters), newest first, with the count and page links (`picker_error` says what is wrong with the search)."""
    error = None
    try:
        listing = run_list.read_listing(args, run_list.PAGE_SIZES[0])
    except ValueError as exc:
        error, listing = str(exc), run_list.read_listing({}, run_list.PAGE_SIZES[0])
    listing = run_list.finished_only(listing, COMPARABLE)
    candidates, total = run_list.runs(listing)
    return {"candidates": candidates, "listing": listing, "total": total, "picker_error": error,
            "last_page": run_list.last_page(listing, total), "shown": run_list.shown(listing, len(candidates), total),
            "scored_kinds": registry.having(Scored)}


@bp.get("/compare")
def compare():
    """The comparison of the evaluations in `ids`, the picker when there are none, or a 400 that says why."""
    ids = requested_ids(request.args)
    if not ids:
        context = picker(request.args)
        return render_template("compare.html", chosen=[], **context), 400 if context["picker_error"] else 200
    try:
        runs = load_runs(ids)
        kind = registry.scored(runs[0]["result"]["kind"])
        baseline = paired_view.choose_baseline(ids, request.args)
        correction = paired_view.choose_correction(request.args)
        for run in runs:  # the one baseline every table of differences on the page measures from
            run["baseline"] = run["id"] == baseline
        data = {**kind.compare(runs), "template": kind.template("compare")}
    except (CompareError, paired_view.PairedError) as exc:
        return render_template("compare.html", error=str(exc), chosen=ids, **picker({})), 400
    paired = {"ids": ids, "runs": runs, "baseline": baseline, "correction": correction,
              "pairs_kind": isinstance(kind, Paired), "rows": paired_view.paired(runs, baseline),
              "labels": {run["id"]: run["label"] for run in runs},
              "metric_labels": {m.name: m.label for m in paired_view.metrics_of(runs)}}
    return render_template("compare.html", cmp=data, figures=data.get("figures"), colours=data.get("colours", {}),
                           paired=paired, provenance=provenance_differences(runs))


def provenance_differences(runs: list[dict]) -> dict:
    """What tells the runs' provenance apart: the differing fields (`rows`, each with every run's value, in the order
    of `runs`) and the runs that recorded none (`missing`)."""
    blocks = [run["result"].get("provenance") for run in runs]
    return {"runs": runs, "rows": provenance.differences(blocks),
            "missing": [run for run, block in zip(runs, blocks) if not block]}


@bp.get("/compare/paired.csv")
def paired_csv():
    """Every paired row of the compared evaluations against the baseline, as CSV; a 400 that says why otherwise."""
    ids = requested_ids(request.args)
    try:
        runs = load_runs(ids)
        rows = paired_view.paired(runs, paired_view.choose_baseline(ids, request.args))
    except (CompareError, paired_view.PairedError) as exc:
        return Response(str(exc), status=400, mimetype="text/plain")
    return csv_response(paired_view.CSV_COLUMNS, paired_view.csv_rows(rows), "paired.csv")
