"""People rate a finished dialogue evaluation's replies in the browser: "Ask people" (draw the slice, each rater's
progress, the rating links, updating the figures) and the rating pages, one reply of the slice at a time.

Who rates: with accounts on (AUTH=on), a signed-in account as itself, at /evaluations/<id>/rating/<position>; anyone,
with accounts on or off, through a rating link /rate/<token>, as the guest the link names. A link's pages are the
only ones its token opens (the guard lets them through by `rating_links.ENDPOINTS`; they check the token themselves, on every
request): they lead nowhere else, and carry no Referer, no cache and no indexing. A saved rating is kept at once
(rating_store.save_rating, source "browser"); the result reads people's ratings when it is scored again ("Update the
figures")."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    make_response,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_login import current_user

from kinds import host
from kinds.dialogue import rating_links, rating_queue, rating_slice, rating_store, result_rubric, rubric_store
from kinds.dialogue.ratings_files import NotAttached, rescore_later
from kinds.kind import JobFailed
from translations import _

bp = Blueprint("rating", __name__)
FINISHED = ("done", "incomplete", "cancelled")
GUEST_PREFIX = "/rate/"
DEFAULT_WIDTH = 10.0  # points of the 0-100 scale: the target width of a 95% interval the form starts with
DEFAULT_SIZE = 40
NEW_LINK = "rating_link"  # the session key of a link just made, until the Ask people page has shown its address


@dataclass(frozen=True)
class Rater:
    """Who rates, and where their pages are: an account (`token` None) or a link's guest."""

    record: dict
    name: str
    token: str | None = None

    @property
    def guest(self) -> bool:
        """Whether this rater came through a rating link."""
        return self.token is not None

    def start(self) -> str:
        """Their starting page: the guest's link, an account's "Ask people" page."""
        if self.token:
            return url_for("rating.guest_start", token=self.token)
        return url_for("rating.overview", evaluation_id=self.record["id"], _anchor="you")

    def page(self, position: int, endpoint: str = "page") -> str:
        """One of their rating pages: the reply at `position` (endpoint page), its save or forget address."""
        if self.token:
            return url_for(f"rating.guest_{endpoint}", token=self.token, position=position)
        return url_for(f"rating.{endpoint}", evaluation_id=self.record["id"], position=position)


def _gone(message: str, status: int = 404) -> NoReturn:
    """A guest's error page, which leads nowhere else."""
    abort(make_response(render_template("dialogue/rate_gone.html", message=message, shared=True), status))


def _refuse(guest: bool, status: int, message: str) -> NoReturn:
    """An error: a guest's page (leading nowhere else), or the dashboard's error page."""
    if guest:
        _gone(message, status)
    abort(status, message)


def _finished(evaluation_id: str, guest: bool = False) -> dict:
    """A finished dialogue evaluation, else 404, 400 or 409 (a guest's page says so without leading elsewhere)."""
    record = host.store().get_evaluation(evaluation_id, with_result=False)
    if record is None:
        _refuse(guest, 404, _("This evaluation no longer exists."))
    if record["kind"] != "dialogue":
        abort(400, _("People rate the replies of dialogue evaluations only."))
    if record["status"] not in FINISHED:
        abort(409, _("Ask people once the evaluation has finished."))
    return record


def _account() -> str | None:
    """The signed-in account's name with accounts on, else None."""
    if current_app.config["AUTH"] == "on" and current_user.is_authenticated:
        return current_user.name
    return None


def _rubric(record: dict):
    """(the Rubric the evaluation was judged under, its result's rubric block); 409 when it is no longer kept."""
    try:
        return rubric_store.of_evaluation(host.store(), record), result_rubric.of_record(record, host.store())
    except JobFailed as exc:
        abort(409, str(exc))


# -- "Ask people" -------------------------------------------------------------------------------------------------

def _width(text: str | None) -> float:
    try:
        width = float(text) if text else DEFAULT_WIDTH
    except ValueError:
        return DEFAULT_WIDTH
    return width if 0 < width <= 100 else DEFAULT_WIDTH


def _overview(evaluation_id: str, problem: str | None = None, status: int = 200):
    record = _finished(evaluation_id)
    new_link = session.pop(NEW_LINK, None)  # shown this once, after the redirect that follows its making
    if new_link and new_link["evaluation_id"] != evaluation_id:
        new_link = None
    store = host.store()
    judged = rating_slice.judged_replies(store, record)
    strata = rating_slice.strata(judged, record["methods"])
    width = _width(request.values.get("width"))
    totals = {m: [v for r, v in judged.items() if r[2] == m] for m in record["methods"]}
    needed = rating_slice.ratings_needed(totals, width)
    chosen = rating_slice.slice_of(store, evaluation_id)
    items = chosen["items"] if chosen else []
    ratings = rating_queue.by_reply(rating_store.people_ratings(store, evaluation_id))
    me = _account()
    mine = rating_queue.rated_by(items, ratings, me) if me else set()
    page = render_template(
        "dialogue/ask_people.html", evaluation=record, slice=chosen, table=rating_queue.slice_table(items, strata),
        judged=len(judged), width=width, needed=needed, methods=sum(1 for values in totals.values() if values),
        size=chosen["size"] if chosen else min(DEFAULT_SIZE, len(judged)), seed=chosen["seed"] if chosen else 0,
        progress=rating_queue.progress(items, ratings, me), me=me, done=len(mine),
        next_position=rating_queue.next_unrated(len(items), mine) if me else None,
        links=rating_links.active(store, evaluation_id), new_link=new_link, problem=problem,
        auth_on=current_app.config["AUTH"] == "on", **result_rubric.page_values(_rubric(record)[1]))
    return page, status, {"Cache-Control": "no-store"}  # a new link's token must not stay in a cache


@bp.get("/evaluations/<evaluation_id>/rating")
def overview(evaluation_id: str):
    """Ask people: the slice and how it is drawn, each rater's progress, the rating links, updating the figures."""
    return _overview(evaluation_id)


def _whole(name: str, low: int, high: int) -> int:
    text = str(request.form.get(name, "")).strip()
    if not text.isdigit() or not low <= int(text) <= high:
        raise ValueError(name)
    return int(text)


@bp.post("/evaluations/<evaluation_id>/rating/slice")
def draw(evaluation_id: str):
    """Draw the slice (size and seed from the form), replacing the one before; people's ratings stay."""
    record = _finished(evaluation_id)
    try:
        size = _whole("size", 1, rating_slice.MAX_SIZE)
        seed = _whole("seed", 0, 2**31 - 1)
    except ValueError as exc:
        message = _("The number of replies must be a whole number from 1 to %(max)s.", max=rating_slice.MAX_SIZE) \
            if exc.args[0] == "size" else _("The seed must be a whole number from 0 to %(max)s.", max=2**31 - 1)
        return _overview(evaluation_id, problem=message, status=400)
    judged = rating_slice.judged_replies(host.store(), record)
    if not judged:
        return _overview(evaluation_id, problem=_("No reply has a valid judgment to rate."), status=409)
    items = rating_slice.draw(rating_slice.strata(judged, record["methods"]), size, seed)
    rating_slice.save_slice(host.store(), evaluation_id, seed, size, items, _account())
    return redirect(url_for(".overview", evaluation_id=evaluation_id, _anchor="slice"))


@bp.post("/evaluations/<evaluation_id>/rating/links")
def create_link(evaluation_id: str):
    """Make a rating link for a named guest; the Ask people page shows its address this once (only its hash is kept;
    the address waits in the maker's session until that page is shown, so that reloading it makes no other link)."""
    _finished(evaluation_id)
    try:
        link, token = rating_links.create(host.store(), evaluation_id, request.form.get("name", ""), _account())
    except rating_links.LinkError as exc:
        return _overview(evaluation_id, problem=str(exc), status=400)
    session[NEW_LINK] = {"evaluation_id": evaluation_id, "name": link["name"],
                         "url": url_for("rating.guest_start", token=token, _external=True)}
    return redirect(url_for(".overview", evaluation_id=evaluation_id, _anchor="links"))


@bp.post("/evaluations/<evaluation_id>/rating/links/<token_hash>/revoke")
def revoke_link(evaluation_id: str, token_hash: str):
    """Revoke a rating link: its address stops working at once."""
    _finished(evaluation_id)
    rating_links.revoke(host.store(), evaluation_id, token_hash) or abort(404)
    return redirect(url_for(".overview", evaluation_id=evaluation_id, _anchor="links"))


@bp.post("/evaluations/<evaluation_id>/rating/rescore")
def update_figures(evaluation_id: str):
    """Have the evaluation scored again in the background (a rescore job), so that its figures read people's ratings
    as they are now; back to the result page, which shows them being updated."""
    _finished(evaluation_id)
    try:
        rescore_later(evaluation_id)
    except NotAttached as exc:
        abort(exc.args[0], exc.args[1])
    return redirect(url_for("pages.evaluation", evaluation_id=evaluation_id, _anchor="human"))


# -- the rating pages ---------------------------------------------------------------------------------------------

def _account_rater(evaluation_id: str) -> Rater:
    record = _finished(evaluation_id)
    name = _account()
    if name is None:
        abort(400, _("Without accounts, people rate through rating links: make one for each rater (you too) on the "
                     "Ask people page."))
    return Rater(record, name)


def _guest(token: str) -> Rater:
    link = rating_links.of_token(host.store(), token)
    if link is None:
        _gone(_("This rating link was revoked or never existed."))
    return Rater(_finished(link["evaluation_id"], guest=True), link["name"], token)


def _slice_items(rater: Rater) -> list:
    chosen = rating_slice.slice_of(host.store(), rater.record["id"])
    if not chosen or not chosen["items"]:
        _refuse(rater.guest, 409, _("No replies to rate yet: the slice has not been drawn."))
    return chosen["items"]


def _rating_page(rater: Rater, position: int, problem: str | None = None, posted=None, status: int = 200):
    """The reply at a position of the slice in its context beside the rubric's questions, the rater's own rating
    filled in."""
    items = _slice_items(rater)
    if not 0 <= position < len(items):
        _refuse(rater.guest, 404, _("The slice has no reply at this position."))
    reply = items[position]
    rubric, block = _rubric(rater.record)
    shown = rating_queue.in_context(host.site(), rater.record, reply, rubric)
    if shown is None:
        _refuse(rater.guest, 409, _("The uploaded file no longer has this reply."))
    ratings = rating_queue.by_reply(rating_store.people_ratings(host.store(), rater.record["id"]))
    questions = rating_queue.fields(rubric, block)
    mine = ratings.get(reply, {}).get(rater.name)
    return render_template(
        "dialogue/rate.html", evaluation=rater.record, rater=rater, position=position, size=len(items), r=shown,
        questions=questions, values=posted if posted is not None else rating_queue.form_values(mine, questions),
        saved=mine is not None, done=len(rating_queue.rated_by(items, ratings, rater.name)),
        others=len(ratings.get(reply, {})) - (1 if mine else 0), version=rating_queue.version(items),
        asks_total=rating_queue.asks_total(block), problem=problem, shared=rater.guest,
        levels_shown=any(q.levels for q in questions)), status


def _save(rater: Rater, position: int):
    """Keep the rater's rating of the reply at a position, then the next reply they have not rated."""
    items = _slice_items(rater)
    if request.form.get("version") != rating_queue.version(items) or not 0 <= position < len(items):
        _refuse(rater.guest, 409, _("The slice was drawn again since this page was opened; nothing was saved. Open "
                                    "the reply again."))
    rubric, block = _rubric(rater.record)
    try:
        rating = rating_queue.form_rating(request.form, rubric, rating_queue.fields(rubric, block))
    except rating_queue.RatingError as exc:
        return _rating_page(rater, position, problem=str(exc), posted=request.form.to_dict(), status=400)
    session_id, number, method = items[position]
    rating_store.save_rating(host.store(), rater.record["id"], rater.name, session_id, number, method, rating,
                             source="browser")
    ratings = rating_queue.by_reply(rating_store.people_ratings(host.store(), rater.record["id"], rater.name))
    after = rating_queue.next_unrated(len(items), rating_queue.rated_by(items, ratings, rater.name), position)
    return redirect(rater.page(after) if after is not None else rater.start())


def _forget(rater: Rater, position: int):
    """Forget the rater's rating of the reply at a position, and show it again."""
    items = _slice_items(rater)
    if not 0 <= position < len(items):
        _refuse(rater.guest, 404, _("The slice has no reply at this position."))
    rating_store.delete_rating(host.store(), rater.record["id"], rater.name, *items[position])
    return redirect(rater.page(position))


@bp.get("/evaluations/<evaluation_id>/rating/<int:position>")
def page(evaluation_id: str, position: int):
    """A signed-in account rates one reply of the slice."""
    return _rating_page(_account_rater(evaluation_id), position)


@bp.post("/evaluations/<evaluation_id>/rating/<int:position>")
def save(evaluation_id: str, position: int):
    """The rating form of an account: keep the rating, then the next reply not rated."""
    return _save(_account_rater(evaluation_id), position)


@bp.post("/evaluations/<evaluation_id>/rating/<int:position>/forget")
def forget(evaluation_id: str, position: int):
    """An account forgets its rating of one reply."""
    return _forget(_account_rater(evaluation_id), position)


@bp.get("/rate/<token>")
def guest_start(token: str):
    """A rating link's first page: who rates, their progress, and the next reply they have not rated."""
    rater = _guest(token)
    chosen = rating_slice.slice_of(host.store(), rater.record["id"])
    items = chosen["items"] if chosen else []
    ratings = rating_queue.by_reply(rating_store.people_ratings(host.store(), rater.record["id"], rater.name))
    mine = rating_queue.rated_by(items, ratings, rater.name)
    return render_template("dialogue/rate_start.html", evaluation=rater.record, rater=rater, size=len(items),
                           done=len(mine), next_position=rating_queue.next_unrated(len(items), mine), shared=True)


@bp.get("/rate/<token>/<int:position>")
def guest_page(token: str, position: int):
    """A link's guest rates one reply of the slice."""
    return _rating_page(_guest(token), position)


@bp.post("/rate/<token>/<int:position>")
def guest_save(token: str, position: int):
    """The rating form of a link's guest: keep the rating, then the next reply not rated."""
    return _save(_guest(token), position)


@bp.post("/rate/<token>/<int:position>/forget")
def guest_forget(token: str, position: int):
    """A link's guest forgets their rating of one reply."""
    return _forget(_guest(token), position)


@bp.after_app_request
def link_headers(response: Response) -> Response:
    """No Referer carrying the token, no caching (a revoked link must not live on) and no indexing under /rate/."""
    if request.path.startswith(GUEST_PREFIX):
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Robots-Tag"] = "noindex, nofollow"
    return response
