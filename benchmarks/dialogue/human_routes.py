"""Attaching people's ratings to a finished dialogue evaluation: the result page's form and the API."""
from __future__ import annotations

from pathlib import Path

from flask import Blueprint, abort, jsonify, redirect, render_template, request, url_for

from benchmarks.dialogue import human_file
from benchmarks.kind import JobFailed
from translations import _
from web import get_runner, get_store
from web.exports import csv_response

bp = Blueprint("human_ratings", __name__)
api_bp = Blueprint("human_ratings_api", __name__, url_prefix="/api")


class NotAttached(Exception):
    """Ratings that cannot be attached: (HTTP status, message, validation report or None)."""


def finished_evaluation(evaluation_id: str) -> dict:
    """A finished dialogue evaluation, else NotAttached (404 for an unknown one)."""
    evaluation = get_store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    if evaluation["kind"] != "dialogue":
        raise NotAttached(400, _("People's ratings can be attached to dialogue evaluations only."), None)
    if evaluation["status"] not in ("done", "incomplete", "cancelled"):
        raise NotAttached(409, _("Attach people's ratings once the evaluation has finished."), None)
    return evaluation


def _attach(evaluation_id: str) -> dict:
    """Check the uploaded ratings file, store it with the evaluation and score the evaluation again."""
    evaluation = finished_evaluation(evaluation_id)
    file = request.files.get("file")
    if file is None or not file.filename:
        raise NotAttached(400, _("Choose a CSV or JSONL file of ratings."), None)
    store = get_store()
    report, rows = human_file.read(file.stream, file.filename, store.judged_rounds(evaluation_id),
                                   evaluation["methods"])
    if not report.ok:
        raise NotAttached(400, _("The ratings file has problems; nothing was attached."), report)
    store.set_human_ratings(evaluation_id, Path(file.filename).name[:200], rows)
    return rescore(evaluation_id)


def rescore(evaluation_id: str) -> dict:
    try:
        return get_runner().rescore(evaluation_id)
    except JobFailed as exc:
        raise NotAttached(409, str(exc), None) from exc


@api_bp.post("/evaluations/<evaluation_id>/human-ratings")
def attach_api(evaluation_id: str):
    """Attach a ratings file (multipart `file`); answers the judge-vs-people agreement."""
    try:
        document = _attach(evaluation_id)
    except NotAttached as exc:
        status, message, report = exc.args
        return jsonify({"error": message, **(report.to_dict() if report else {})}), status
    return jsonify({"ratings": len(get_store().human_ratings(evaluation_id)),
                    "agreement": document["agreement"]["human"]})


@api_bp.delete("/evaluations/<evaluation_id>/human-ratings")
def detach_api(evaluation_id: str):
    """Detach the ratings and score the evaluation again without them."""
    try:
        finished_evaluation(evaluation_id)
        get_store().clear_human_ratings(evaluation_id)
        rescore(evaluation_id)
    except NotAttached as exc:
        return jsonify({"error": exc.args[1]}), exc.args[0]
    return jsonify({"ratings": 0})


@bp.post("/evaluations/<evaluation_id>/human-ratings")
def attach_page(evaluation_id: str):
    """The result page's form: attach, then back to the agreement figures; or the problems found."""
    try:
        _attach(evaluation_id)
    except NotAttached as exc:
        status, message, report = exc.args
        return render_template("dialogue/human_ratings_problems.html", evaluation_id=evaluation_id, message=message,
                               report=report), status
    return redirect(url_for("pages.evaluation", evaluation_id=evaluation_id, _anchor="human"))


@bp.get("/evaluations/<evaluation_id>/human-ratings.csv")
def download(evaluation_id: str):
    """The attached ratings as CSV, in the format they are uploaded in."""
    get_store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    rows = get_store().human_ratings(evaluation_id)
    header = ("session_id", "round", "method", *human_file.RATINGS)
    return csv_response(header, [tuple(r[human_file.column(c)] if c in human_file.RATINGS else r[c] for c in header)
                                 for r in rows], f"human-ratings-{evaluation_id}.csv")
