"""The dialogue kind's pages beyond one evaluation's: attaching people's ratings to a finished evaluation (the result
page's form and the API), and people's reviews of single judgments (reviews.py: the judgment page's form, the API,
the ratings-file export, and using them as the evaluation's people's ratings)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from flask import Blueprint, abort, jsonify, redirect, render_template, request, url_for
from pydantic import RootModel

from common.contract import Answer, Count, Error, Refused, Request, operation
from kinds import host
from kinds.dialogue import human_file, result_rubric, reviews
from kinds.dialogue import tables as dialogue_tables
from kinds.kind import JobFailed
from translations import _

ratings_bp = Blueprint("human_ratings", __name__)
ratings_api_bp = Blueprint("human_ratings_api", __name__, url_prefix="/api")
reviews_bp = Blueprint("reviews", __name__)
reviews_api_bp = Blueprint("reviews_api", __name__, url_prefix="/api")
RATINGS_FILE = "reviews made on the judgments' pages"


class Ratings(Answer):
    """How many people's ratings are attached, and the judge-vs-people agreement."""

    ratings: int
    agreement: dict[str, Any] | None = None


class JudgmentKey(Request):
    """One judgment: the session's index, the round, the method and the mode (fine, binary, ...)."""

    index: Count
    round: Count
    method: str
    mode: str


class Review(JudgmentKey):
    """A person's review of one judgment: agreed, or overridden with their own score or verdict."""

    decision: Literal["agreed", "overridden"]
    total: float | str | None = None
    verdict: int | str | bool | None = None
    comment: str | None = None


class ReviewRow(Answer):
    """A kept review."""

    session_idx: int
    session_id: str
    round: int
    method: str
    mode: str
    decision: str
    total: float | None
    verdict: int | None
    comment: str | None
    reviewer: str | None
    updated_at: str


class ReviewRows(RootModel[list[ReviewRow]]):
    """An evaluation's reviews."""


class ReviewCounts(Answer):
    """The evaluation's reviews, counted."""


class NotAttached(Exception):
    """Ratings that cannot be attached: (HTTP status, message, validation report or None)."""


def finished_evaluation(evaluation_id: str) -> dict:
    """A finished dialogue evaluation, else NotAttached (404 for an unknown one)."""
    evaluation = host.store().get_evaluation(evaluation_id, with_result=False) or abort(404)
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
    store = host.store()
    rubric = result_rubric.of_record(evaluation, store)
    report, rows = human_file.read(file.stream, file.filename, store.judged_rounds(evaluation_id),
                                   evaluation["methods"], rubric)
    if not report.ok:
        raise NotAttached(400, _("The ratings file has problems; nothing was attached."), report)
    dialogue_tables.set_human_ratings(store, evaluation_id, Path(file.filename).name[:200], rows,
                                      result_rubric.keys(rubric))
    return rescore(evaluation_id)


def rescore(evaluation_id: str) -> dict:
    """Score the evaluation again (its people's ratings or reviews changed); NotAttached when it cannot be."""
    try:
        return host.runner().rescore(evaluation_id)
    except JobFailed as exc:
        raise NotAttached(409, str(exc), None) from exc


@ratings_api_bp.post("/evaluations/<evaluation_id>/human-ratings")
@operation("Attach people's ratings (CSV or JSONL) to a finished dialogue evaluation",
           {200: Ratings, 400: Refused, 409: Error}, form=Request, files=("file",), tags=("evaluations",))
def attach_api(evaluation_id: str):
    """Attach a ratings file (multipart `file`); answers the judge-vs-people agreement."""
    try:
        document = _attach(evaluation_id)
    except NotAttached as exc:
        status, message, report = exc.args
        return jsonify({"error": message, **(report.to_dict() if report else {})}), status
    return jsonify({"ratings": len(dialogue_tables.human_ratings(host.store(), evaluation_id)),
                    "agreement": document["agreement"]["human"]})


@ratings_api_bp.delete("/evaluations/<evaluation_id>/human-ratings")
@operation("Detach the people's ratings", {200: Ratings, 400: Error, 409: Error}, tags=("evaluations",))
def detach_api(evaluation_id: str):
    """Detach the ratings and score the evaluation again without them."""
    try:
        finished_evaluation(evaluation_id)
        dialogue_tables.clear_human_ratings(host.store(), evaluation_id)
        rescore(evaluation_id)
    except NotAttached as exc:
        return jsonify({"error": exc.args[1]}), exc.args[0]
    return jsonify({"ratings": 0})


@ratings_bp.post("/evaluations/<evaluation_id>/human-ratings")
def attach_page(evaluation_id: str):
    """The result page's form: attach, then back to the agreement figures; or the problems found."""
    try:
        _attach(evaluation_id)
    except NotAttached as exc:
        status, message, report = exc.args
        return render_template("dialogue/human_ratings_problems.html", evaluation_id=evaluation_id, message=message,
                               report=report), status
    return redirect(url_for("pages.evaluation", evaluation_id=evaluation_id, _anchor="human"))


@ratings_bp.get("/evaluations/<evaluation_id>/human-ratings.csv")
def download(evaluation_id: str):
    """The attached ratings as CSV, in the format they are uploaded in (the ratings of the evaluation's rubric)."""
    evaluation = host.store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    rows = dialogue_tables.human_ratings(host.store(), evaluation_id)
    header = ("session_id", "round", "method", *human_file.ratings(result_rubric.of_record(evaluation, host.store())))
    return host.csv_response(header, [tuple(r.get(human_file.column(c)) for c in header) for r in rows],
                             f"human-ratings-{evaluation_id}.csv")


# -- reviews of single judgments ---------------------------------------------------------------------------------

def _key(values) -> tuple[int, int, str, str]:
    try:
        return int(values.get("index")), int(values.get("round")), str(values["method"]), str(values["mode"])
    except (KeyError, TypeError, ValueError):
        raise NotAttached(400, _("Name the judgment: index (of the session), round, method and mode."), None) from None


def _judgments(evaluation_id: str, session_indexes) -> dict[tuple, dict]:
    return {(j["session_idx"], j["round"], j["method"], j["mode"]): j
            for j in host.store().judgments(evaluation_id, session_indexes)}


def _save(evaluation_id: str, values) -> dict:
    """Keep the review that `values` gives and score the evaluation again; its counts."""
    finished_evaluation(evaluation_id)
    key = _key(values)
    judgment = _judgments(evaluation_id, [key[0]]).get(key)
    if judgment is None:
        raise NotAttached(404, _("There is no such judgment."), None)
    try:
        review = reviews.checked(judgment, values)
    except reviews.ReviewError as exc:
        raise NotAttached(400, str(exc), None) from exc
    dialogue_tables.set_review(host.store(), evaluation_id, key, review)
    return rescore(evaluation_id)["reviews"]


@reviews_api_bp.put("/evaluations/<evaluation_id>/reviews")
@operation("Review one judgment", {200: ReviewCounts, 400: Error, 409: Error}, body=Review, tags=("evaluations",))
def save_api(evaluation_id: str, body: dict):
    """Review one judgment: `{index, round, method, mode, decision: agreed|overridden, total|verdict, comment}`."""
    try:
        return jsonify(_save(evaluation_id, body))
    except NotAttached as exc:
        return jsonify({"error": exc.args[1]}), exc.args[0]


@reviews_api_bp.get("/evaluations/<evaluation_id>/reviews")
@operation("Every review of an evaluation", {200: ReviewRows}, tags=("evaluations",))
def list_api(evaluation_id: str):
    """Every review of the evaluation."""
    host.store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    return jsonify(dialogue_tables.reviews(host.store(), evaluation_id))


@reviews_api_bp.delete("/evaluations/<evaluation_id>/reviews")
@operation("Forget the review of one judgment", {204: None, 400: Error, 409: Error}, query=JudgmentKey,
           tags=("evaluations",))
def delete_api(evaluation_id: str):
    """Forget the review of one judgment (`?index=&round=&method=&mode=`): 204, or 404 when there is none."""
    try:
        finished_evaluation(evaluation_id)
        if not dialogue_tables.delete_review(host.store(), evaluation_id, _key(request.args)):
            abort(404)
        rescore(evaluation_id)
    except NotAttached as exc:
        return jsonify({"error": exc.args[1]}), exc.args[0]
    return "", 204


@reviews_bp.post("/evaluations/<evaluation_id>/reviews")
def save_page(evaluation_id: str):
    """The judgment page's review form; back to the judgment."""
    try:
        _save(evaluation_id, request.form)
    except NotAttached as exc:
        abort(exc.args[0], exc.args[1])
    key = _key(request.form)
    return redirect(url_for("pages.kind_view", evaluation_id=evaluation_id, name="prompt", index=key[0],
                            round=key[1], method=key[2], mode=key[3]))


def ratings(evaluation_id: str) -> list[dict]:
    """The evaluation's reviews as people's ratings rows."""
    found = dialogue_tables.reviews(host.store(), evaluation_id)
    return reviews.ratings_rows(found, _judgments(evaluation_id, sorted({r["session_idx"] for r in found})))


@reviews_bp.get("/evaluations/<evaluation_id>/reviews.csv", endpoint="download")  # as it always was
def download_reviews(evaluation_id: str):
    """The reviews as a people's ratings file (the format the ratings form takes)."""
    host.store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    header = ("session_id", "round", "method", "total", "binary")
    return host.csv_response(header, [(r["session_id"], r["round"], r["method"], r["total"], r["verdict"])
                                 for r in ratings(evaluation_id)], f"reviews-{evaluation_id}.csv")


@reviews_bp.post("/evaluations/<evaluation_id>/reviews/as-ratings")
def as_ratings(evaluation_id: str):
    """Use the reviews as the evaluation's people's ratings (replacing any attached), for the agreement figures."""
    try:
        finished_evaluation(evaluation_id)
        rows = ratings(evaluation_id)
        if not rows:
            raise NotAttached(409, _("There are no reviews yet."), None)
        dialogue_tables.set_human_ratings(host.store(), evaluation_id, RATINGS_FILE, rows)
        rescore(evaluation_id)
    except NotAttached as exc:
        abort(exc.args[0], exc.args[1])
    return redirect(url_for("pages.evaluation", evaluation_id=evaluation_id, _anchor="human"))
