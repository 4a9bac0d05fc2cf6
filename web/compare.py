"""The compare page: two or more finished evaluations of one kind side by side.

`GET /compare?ids=a,b` (or `?ids=a&ids=b`): a merged table with one row per (evaluation, method), the AL(k)
and BAR(k) curves of every pair overlaid, and for every method found in more than one evaluation the
differences of AVG and of the binary rate against the first evaluation listed that has it, with whether their
95% confidence intervals overlap. Without ids the page offers the finished evaluations to pick from.
"""
from __future__ import annotations

from typing import Mapping

from flask import Blueprint, Flask, render_template, request

import agentbench_charts
import charts
import compare_charts
import mobility_charts
from translations import _, status_label
from web import get_store
from web.payloads import list_arg

bp = Blueprint("compare", __name__)
MAX_EVALUATIONS = compare_charts.MAX_RUNS
SHORT_ID = 6


class CompareError(ValueError):
    """A request the compare page cannot answer, with a message for the user."""


def register(app: Flask, csrf=None) -> None:
    """Register the compare page (it only reads, so there is nothing to exempt from CSRF)."""
    app.register_blueprint(bp)


def requested_ids(args: Mapping) -> list[str]:
    """Evaluation ids from `ids=a,b` and/or `ids=a&ids=b`, in order, without blanks and repeats."""
    return [i[:64] for i in list_arg(args, "ids")]


def load_runs(ids: list[str]) -> list[dict]:
    """The evaluations to compare with their result documents and labels; CompareError when they cannot be."""
    if len(ids) < 2:
        raise CompareError(_("Choose at least two finished evaluations to compare."))
    if len(ids) > MAX_EVALUATIONS:
        raise CompareError(_("Compare at most %(n)s evaluations at a time.", n=MAX_EVALUATIONS))
    store = get_store()
    records = {i: store.get_evaluation(i) for i in ids}
    unknown = [i for i, record in records.items() if record is None]
    if unknown:
        raise CompareError(_("No evaluation has the id %(ids)s.", ids=", ".join(unknown)))
    kinds = {record["kind"] for record in records.values()}
    if len(kinds) > 1:
        raise CompareError(_("Compare evaluations of one kind at a time; these are of kinds %(kinds)s.",
                             kinds=", ".join(sorted(kinds))))
    unfinished = [f"{i} ({status_label(record['status'])})" for i, record in records.items()
                  if record["status"] != "done" or not record.get("result")]
    if unfinished:
        raise CompareError(_("Only finished evaluations can be compared; not finished: %(ids)s.",
                             ids=", ".join(unfinished)))
    runs = []
    for evaluation_id in ids:
        record = records[evaluation_id]
        result = record["result"]
        upload = store.get_upload(record["upload_id"])
        filename = upload["filename"] if upload else result["input"]["filename"]
        model = _model(result)
        runs.append({"id": evaluation_id, "short_id": evaluation_id[:SHORT_ID], "filename": filename,
                     "model": model, "label": f"{filename} · {evaluation_id[:SHORT_ID]} · {model}",
                     "finished_at": record["finished_at"], "result": result})
    return runs


def _model(result: dict) -> str:
    """What a run was measured with: the judge model, the reference set, or a dash."""
    if "judge" in result:
        return result["judge"]["model"]
    if "reference" in result:
        return result["reference"]["name"]
    return (result.get("annotation") or {}).get("judge", {}).get("model") or "—"


def _difference(first, second) -> float | None:
    return None if first is None or second is None else second - first


def _overlap(first, second) -> bool | None:
    """Whether two confidence intervals [low, high] overlap; None when either is missing."""
    if not first or not second:
        return None
    return first[0] <= second[1] and second[0] <= first[1]


def comparison(runs: list[dict]) -> dict:
    """Rows of the merged table, differences between runs of the same method, colours and figures."""
    methods: list[str] = []
    for run in runs:
        methods += [m for m in run["result"]["methods"] if m not in methods]
    colours = charts.method_colours(methods)
    for position, run in enumerate(runs):
        run["style"] = compare_charts.run_style(position)
    rows = [{"run": run, "method": name, "metrics": m} for run in runs for name, m in run["result"]["methods"].items()]
    differences = []
    for name in methods:
        having = [run for run in runs if name in run["result"]["methods"]]
        base = having[0]
        a = base["result"]["methods"][name]
        for other in having[1:]:
            b = other["result"]["methods"][name]
            differences.append({
                "method": name, "base": base, "other": other,
                "avg": _difference(a["avg"], b["avg"]), "avg_overlap": _overlap(a["ci95"]["avg"], b["ci95"]["avg"]),
                "binary_rate": _difference(a["binary_rate"], b["binary_rate"]),
                "binary_rate_overlap": _overlap(a["ci95"]["binary_rate"], b["ci95"]["binary_rate"])})
    return {"runs": runs, "methods": methods, "colours": colours, "rows": rows, "differences": differences,
            "figures": compare_charts.compare_figures(runs, colours)}


def mobility_comparison(runs: list[dict]) -> dict:
    """Generated mobility sets side by side: both variants' JSDs and final scores, and their charts."""
    for position, run in enumerate(runs):
        run["style"] = compare_charts.run_style(position)
    return {"runs": runs, "kind": "mobility", "metric_labels": mobility_charts.metric_labels(),
            "figures": compare_charts.mobility_figures(runs, mobility_charts.metric_labels())}


def conversation_comparison(runs: list[dict]) -> dict:
    """Conversation uploads side by side: simulator fidelity and, where annotated, the judge's ratings."""
    return {"runs": runs, "kind": "conversation", "annotated": any(run["result"].get("annotation") for run in runs)}


def agentbench_comparison(runs: list[dict]) -> dict:
    """AgentBench uploads side by side: one row per (upload, agent) with its task scores and OA."""
    tasks: list[str] = []
    for run in runs:
        tasks += [t for t in run["result"]["tasks"] if t not in tasks]
    rows = [{"run": run, "agent": name, "doc": agent} for run in runs for name, agent in run["result"]["agents"].items()]
    return {"runs": runs, "kind": "agentbench", "tasks": tasks, "rows": rows,
            "task_labels": agentbench_charts.task_labels()}


COMPARISONS = {"mobility": mobility_comparison, "conversation": conversation_comparison,
               "agentbench": agentbench_comparison}


def _candidates() -> list[dict]:
    """Finished evaluations, newest first, to pick from."""
    return [e for e in get_store().list_evaluations() if e["status"] == "done"]


@bp.get("/compare")
def compare():
    """The comparison of the evaluations in `ids`, the picker when there are none, or a 400 that says why."""
    ids = requested_ids(request.args)
    if not ids:
        return render_template("compare.html", candidates=_candidates(), chosen=[])
    try:
        runs = load_runs(ids)
        data = COMPARISONS.get(runs[0]["result"]["kind"], comparison)(runs)
    except CompareError as exc:
        return render_template("compare.html", error=str(exc), candidates=_candidates(), chosen=ids), 400
    return render_template("compare.html", cmp=data, figures=data.get("figures"), colours=data.get("colours", {}))
