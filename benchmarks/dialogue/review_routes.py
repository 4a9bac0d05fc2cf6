"""People's reviews of single judgments (reviews.py): the judgment page's form, the API, the ratings-file export,
and using them as the evaluation's people's ratings."""
from __future__ import annotations

from flask import Blueprint, abort, jsonify, redirect, request, url_for

from benchmarks.dialogue import reviews
from benchmarks.dialogue.human_routes import NotAttached, finished_evaluation, rescore
from translations import _
from web import get_store
from web.exports import csv_response

bp = Blueprint("reviews", __name__)
api_bp = Blueprint("reviews_api", __name__, url_prefix="/api")
RATINGS_FILE = "reviews made on the judgments' pages"


def _key(values) -> tuple[int, int, str, str]:
    try:
        return int(values.get("index")), int(values.get("round")), str(values["method"]), str(values["mode"])
    except (KeyError, TypeError, ValueError):
        raise NotAttached(400, _("Name the judgment: index (of the session), round, method and mode."), None) from None


def _judgments(evaluation_id: str, session_indexes) -> dict[tuple, dict]:
    return {(j["session_idx"], j["round"], j["method"], j["mode"]): j
            for j in get_store().judgments(evaluation_id, session_indexes)}


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
    get_store().set_review(evaluation_id, key, review)
    return rescore(evaluation_id)["reviews"]


@api_bp.put("/evaluations/<evaluation_id>/reviews")
def save_api(evaluation_id: str):
    """Review one judgment: `{index, round, method, mode, decision: agreed|overridden, total|verdict, comment}`."""
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return jsonify({"error": _("Send a JSON object naming the judgment and the decision.")}), 400
    try:
        return jsonify(_save(evaluation_id, body))
    except NotAttached as exc:
        return jsonify({"error": exc.args[1]}), exc.args[0]


@api_bp.get("/evaluations/<evaluation_id>/reviews")
def list_api(evaluation_id: str):
    """Every review of the evaluation."""
    get_store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    return jsonify(get_store().reviews(evaluation_id))


@api_bp.delete("/evaluations/<evaluation_id>/reviews")
def delete_api(evaluation_id: str):
    """Forget the review of one judgment (`?index=&round=&method=&mode=`): 204, or 404 when there is none."""
    try:
        finished_evaluation(evaluation_id)
        if not get_store().delete_review(evaluation_id, _key(request.args)):
            abort(404)
        rescore(evaluation_id)
    except NotAttached as exc:
        return jsonify({"error": exc.args[1]}), exc.args[0]
    return "", 204


@bp.post("/evaluations/<evaluation_id>/reviews")
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
    found = get_store().reviews(evaluation_id)
    return reviews.ratings_rows(found, _judgments(evaluation_id, sorted({r["session_idx"] for r in found})))


@bp.get("/evaluations/<evaluation_id>/reviews.csv")
def download(evaluation_id: str):
    """The reviews as a people's ratings file (the format the ratings form takes)."""
    get_store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    header = ("session_id", "round", "method", "total", "binary")
    return csv_response(header, [(r["session_id"], r["round"], r["method"], r["total"], r["verdict"])
                                 for r in ratings(evaluation_id)], f"reviews-{evaluation_id}.csv")


@bp.post("/evaluations/<evaluation_id>/reviews/as-ratings")
def as_ratings(evaluation_id: str):
    """Use the reviews as the evaluation's people's ratings (replacing any attached), for the agreement figures."""
    try:
        finished_evaluation(evaluation_id)
        rows = ratings(evaluation_id)
        if not rows:
            raise NotAttached(409, _("There are no reviews yet."), None)
        get_store().set_human_ratings(evaluation_id, RATINGS_FILE, rows)
        rescore(evaluation_id)
    except NotAttached as exc:
        abort(exc.args[0], exc.args[1])
    return redirect(url_for("pages.evaluation", evaluation_id=evaluation_id, _anchor="human"))
