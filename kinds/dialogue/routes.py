"""The dialogue kind's pages beyond one evaluation's: attaching people's ratings to a finished evaluation (the result
page's form and the API), and people's reviews of single judgments (reviews.py: the judgment page's form, the API,
the ratings-file export, and using them as the evaluation's people's ratings)."""
from __future__ import annotations

from typing import Any, Literal

from flask import Blueprint, Response, abort, jsonify, redirect, render_template, request, url_for
from pydantic import Field

from common.contract import Answer, Answers, Count, Error, Refused, Request, RescoreState, operation
from common.downloads import attachment
from kinds import host
from kinds.dialogue import rating_store, ratings_files, review_steps, reviews
from kinds.dialogue import tables as dialogue_tables
from kinds.dialogue.ratings_files import NotAttached, rescore, rescore_later
from translations import _

ratings_bp = Blueprint("human_ratings", __name__)
ratings_api_bp = Blueprint("human_ratings_api", __name__, url_prefix="/api")
reviews_bp = Blueprint("reviews", __name__)
reviews_api_bp = Blueprint("reviews_api", __name__, url_prefix="/api")
REVIEWS_RATER = "reviews"  # the rater of the reviews used as people's ratings


class Ratings(Answer):
    """How many people's ratings the evaluation has, every rater's, and the rescore job that updates its figures
    (`rescore`: its state; GET /api/evaluations/<id>/rescore, the Location header, follows it)."""

    ratings: int
    rescore: RescoreState


class Attached(Ratings):
    """What a ratings file attached (`attached` ratings by `raters`), the replies rated now, and the rescore job
    that updates the judge-vs-people agreement (`agreement.human` of the result, once it is done)."""

    replies: int
    attached: int
    raters: list[str]


class RatingsForm(Request):
    """A ratings file's form: whose ratings its rows without a `rater` column are (default: the file's name)."""

    rater: str | None = Field(None, max_length=rating_store.MAX_RATER)


class RaterQuery(Request):
    """One rater's ratings only (by name), else every rater's."""

    rater: str | None = Field(None, max_length=rating_store.MAX_RATER)


class RatingsQuery(RaterQuery):
    """Every rater's ratings as JSON, or a ratings file to download (`format`: csv or jsonl)."""

    format: Literal["json", "csv", "jsonl"] = "json"


class RaterSummary(Answer):
    """One rater: how many ratings, from where (file, api, browser, reviews), when last changed."""

    rater: str
    ratings: int
    sources: list[str]
    updated_at: str


class PeopleRatings(Answer):
    """Every rater's ratings of an evaluation (each: rater, session_id, round, method, total, verdict, each
    dimension's rating under its key, source, line, updated_at), and the raters."""

    raters: list[RaterSummary]
    ratings: list[dict[str, Any]]


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


class ReviewRows(Answers[ReviewRow]):
    """An evaluation's reviews."""


class ReviewCounts(Answer):
    """The evaluation's reviews, counted."""


def finished_evaluation(evaluation_id: str) -> dict:
    """A finished dialogue evaluation of the running app, else NotAttached."""
    return ratings_files.finished_evaluation(host.store(), evaluation_id)


def _error(exc: NotAttached):
    """The API's answer to ratings that cannot be attached, read or removed."""
    status, message, report = exc.args
    return jsonify({"error": message, **(report.to_dict() if report else {})}), status


def _attach(evaluation_id: str) -> dict:
    """Check the uploaded ratings file (form field `rater`: whose rows without a rater column are), keep its
    ratings and have the evaluation scored again in the background; what the API answers."""
    store = host.store()
    ratings_files.finished_evaluation(store, evaluation_id)
    file = request.files.get("file")
    if file is None or not file.filename:
        raise NotAttached(400, _("Choose a CSV or JSONL file of ratings."), None)
    report, _rows = ratings_files.attach(store, evaluation_id, file.stream, file.filename,
                                         request.form.get("rater"))
    state = rescore_later(evaluation_id)
    every = rating_store.people_ratings(store, evaluation_id)
    return {"ratings": len(every), "replies": len(rating_store.by_reply(every)),
            "attached": report.summary["ratings"], "raters": report.summary["raters"], "rescore": state}


def _accepted(evaluation_id: str, answer: dict):
    """202 with the answer, the rescore job's state at its Location."""
    return jsonify(answer), 202, {"Location": url_for("api.rescore_state", evaluation_id=evaluation_id)}


@ratings_api_bp.post("/evaluations/<evaluation_id>/human-ratings")
@operation("Attach people's ratings (CSV or JSONL) to a finished dialogue evaluation; its figures are updated by a "
           "rescore job", {202: Attached, 400: Refused, 409: Error}, form=RatingsForm, files=("file",),
           tags=("evaluations",))
def attach_api(evaluation_id: str):
    """Attach a ratings file (multipart `file`, optional `rater`), in place of the ratings of the raters it names;
    answers 202 at once with the counts and the rescore job's state (Location: where to follow it; the
    judge-vs-people agreement is in the result once it is done)."""
    try:
        return _accepted(evaluation_id, _attach(evaluation_id))
    except NotAttached as exc:
        return _error(exc)


@ratings_api_bp.get("/evaluations/<evaluation_id>/human-ratings")
@operation("Every rater's ratings of a dialogue evaluation, as JSON or (format=csv|jsonl) a ratings file",
           {200: PeopleRatings, 400: Error}, query=RatingsQuery, downloads=tuple(ratings_files.MEDIA_TYPES.values()),
           tags=("evaluations",))
def ratings_api(evaluation_id: str):
    """Every rater's ratings (`?rater=` one's): JSON with the raters, or with `?format=csv|jsonl` a ratings file to
    download, which attached again gives the same ratings."""
    store = host.store()
    try:
        evaluation = ratings_files.dialogue_evaluation(store, evaluation_id)
    except NotAttached as exc:
        return _error(exc)
    form, rater = request.args.get("format", "json"), request.args.get("rater") or None
    if form in ratings_files.FORMATS:
        return Response(ratings_files.export(store, evaluation, form, rater), mimetype=ratings_files.MEDIA_TYPES[form],
                        headers={"Content-Disposition": attachment(f"human-ratings-{evaluation_id}.{form}")})
    rows = rating_store.people_ratings(store, evaluation_id, rater)
    return jsonify({"raters": rating_store.raters(rows), "ratings": rows})


@ratings_api_bp.delete("/evaluations/<evaluation_id>/human-ratings")
@operation("Remove people's ratings: one rater's (?rater=), else every one; the figures are updated by a rescore job",
           {202: Ratings, 400: Error, 409: Error}, query=RaterQuery, tags=("evaluations",))
def detach_api(evaluation_id: str):
    """Remove one rater's ratings (`?rater=`; 404 when they have none), else all, and have the evaluation scored
    again in the background: 202 with the ratings left and the rescore job's state."""
    store = host.store()
    rater = request.args.get("rater") or None
    try:
        ratings_files.finished_evaluation(store, evaluation_id)
        if not rating_store.clear_human_ratings(store, evaluation_id, rater) and rater is not None:
            raise NotAttached(404, _("There are no ratings by %(rater)s.", rater=rater), None)
        state = rescore_later(evaluation_id)
    except NotAttached as exc:
        return _error(exc)
    return _accepted(evaluation_id, {"ratings": len(rating_store.people_ratings(store, evaluation_id)),
                                     "rescore": state})


@ratings_bp.post("/evaluations/<evaluation_id>/human-ratings")
def attach_page(evaluation_id: str):
    """The result page's form: attach, then back to the agreement figures (being updated); or the problems found."""
    try:
        _attach(evaluation_id)
    except NotAttached as exc:
        status, message, report = exc.args
        return render_template("dialogue/human_ratings_problems.html", evaluation_id=evaluation_id, message=message,
                               report=report), status
    return redirect(url_for("pages.evaluation", evaluation_id=evaluation_id, _anchor="human"))


@ratings_bp.get("/evaluations/<evaluation_id>/human-ratings.csv")
def download(evaluation_id: str):
    """Every rater's ratings as a CSV ratings file (the ratings of the evaluation's rubric, a column `rater`)."""
    store = host.store()
    evaluation = store.get_evaluation(evaluation_id, with_result=False) or abort(404)
    return Response("\ufeff" + ratings_files.export(store, evaluation, "csv"), mimetype="text/csv",
                    headers={"Content-Disposition": attachment(f"human-ratings-{evaluation_id}.csv")})


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
    """The judgment page's review form; back to the judgment, within the grid it was reached from."""
    try:
        _save(evaluation_id, request.form)
    except NotAttached as exc:
        abort(exc.args[0], exc.args[1])
    key = _key(request.form)
    grid: dict = review_steps.grid_args({name: request.form.get(f"grid_{name}", "") for name in review_steps.GRID_ARGS})
    return redirect(url_for("pages.kind_view", evaluation_id=evaluation_id, name="prompt", index=key[0],
                            round=key[1], method=key[2], mode=key[3], **grid))


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
    """Use the reviews as people's ratings, those of the rater "reviews" (replacing theirs; other raters' stay), for
    the agreement figures."""
    try:
        finished_evaluation(evaluation_id)
        rows = ratings(evaluation_id)
        if not rows:
            raise NotAttached(409, _("There are no reviews yet."), None)
        rating_store.add_ratings(host.store(), evaluation_id, [{**row, "rater": REVIEWS_RATER} for row in rows],
                                 "reviews")
        rescore_later(evaluation_id)
    except NotAttached as exc:
        abort(exc.args[0], exc.args[1])
    return redirect(url_for("pages.evaluation", evaluation_id=evaluation_id, _anchor="human"))
