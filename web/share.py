"""Read-only share links: one unguessable token per link gives read access to one result, until revoked.

The share page is the result page itself (pages.evaluation rendering templates/result.html) in *shared mode*,
on for every request under /share/:

- templates see `shared` true: base.html drops the navigation, result.html the progress poller, the controls,
  the session filter and the share panel;
- `url_for` in templates is replaced by `shared_url_for`, which sends the result page's own links to their
  share equivalents (the result page with its query string, e.g. ?page=2, and the JSON and CSV exports) and
  turns every other link into the app into "#", so nothing added to result.html later can lead a visitor of a
  shared link to other evaluations, the settings or the API;
- responses carry `X-Robots-Tag: noindex, nofollow`, `Referrer-Policy: no-referrer` (the token is in the
  address; other sites must not receive it) and `Cache-Control: no-store` (a revoked link must not live on in
  a cache).

A dataset's leaderboard has share links of its own (`/share/datasets/<token>`, web/leaderboard.py), in the same
shared mode: `shared_url_for` sends the leaderboard's links to their share equivalents (DATASET_SHARED_ENDPOINTS).

Tokens are `secrets.token_urlsafe(24)` (192 bits, 32 characters) and are stored as they are, not hashed: the
result page lists active links again for copying, and a leaked database already holds every result a link
could show. Revoking a link is the remedy for a leaked link.
"""
from __future__ import annotations

import secrets
from typing import NoReturn

from flask import (
    Blueprint,
    Flask,
    Response,
    abort,
    current_app,
    g,
    has_request_context,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)

from common.contract import Error, operation
from kinds.host import new_id
from translations import _
from web import errors, exports, get_store, pages
from web import schemas as S

PREFIX = "/share/"
TOKEN_BYTES = 24
bp = Blueprint("share", __name__)
api_bp = Blueprint("share_api", __name__, url_prefix="/api")

# Result-page links and where they lead on a share page; endpoints kept as they are; everything else is "#".
SHARED_ENDPOINTS = {"pages.evaluation": "share.page", "exports.export_json": "share.export_json",
                    "exports.export_csv": "share.export_csv", "pages.kind_view": "share.kind_view",
                    "exports.export_judgments": "share.export_judgments", "exports.export_report": "share.export_report",
                    "exports.export_download": "share.export_download"}
KEPT_ENDPOINTS = {"static", "pages.plotly_js", "pages.set_language"}
# A dataset's leaderboard under its own share links (web/leaderboard.py): its links and downloads, the same way.
DATASET_SHARED_ENDPOINTS = {"leaderboard.page": "leaderboard.shared_page", "leaderboard.export_json":
                            "leaderboard.shared_json", "leaderboard.export_csv": "leaderboard.shared_csv",
                            "leaderboard.export_trend": "leaderboard.shared_trend"}


def register(app: Flask, csrf) -> None:
    """Register the share pages and the share API (exempt from CSRF like the rest of the API)."""
    app.register_blueprint(bp)
    app.register_blueprint(api_bp)
    csrf.exempt(api_bp)


def new_token() -> str:
    """An unguessable, URL-safe share token."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def share_url(share: dict) -> str:
    """The absolute address of a share link."""
    return url_for("share.page", token=share["token"], _external=True)


def share_json(share: dict) -> dict:
    """What the API and the share panel say about a share link."""
    return {"id": share["id"], "evaluation_id": share["evaluation_id"], "token": share["token"],
            "url": share_url(share), "created_at": share["created_at"], "revoked_at": share["revoked_at"],
            "active": share["revoked_at"] is None}


@bp.app_template_global()
def share_links(evaluation_id: str) -> list[dict]:
    """Active share links of an evaluation (for the share panel of the result page)."""
    return [share_json(s) for s in get_store().list_shares(evaluation_id)]


def _create(evaluation_id: str):
    """A new share link of an evaluation that has a result; an error response when there is none yet."""
    record = get_store().get_evaluation(evaluation_id) or abort(404)
    if not record.get("result"):
        return None, errors.respond(409, _("This evaluation has no result to share yet."))
    return get_store().add_share(new_id(), record["id"], new_token()), None


def _revoke(evaluation_id: str, share_id: str) -> dict:
    get_store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    return get_store().revoke_share(evaluation_id, share_id) or abort(404)


# result page: the share panel's forms --------------------------------------------------------------------
@bp.post("/evaluations/<evaluation_id>/shares")
def create_page(evaluation_id: str):
    """Create a share link from the result page and go back to it."""
    _share, problem = _create(evaluation_id)
    return problem or redirect(url_for("pages.evaluation", evaluation_id=evaluation_id, _anchor="share"))


@bp.post("/evaluations/<evaluation_id>/shares/<share_id>/revoke")
def revoke_page(evaluation_id: str, share_id: str):
    """Revoke a share link from the result page and go back to it."""
    _revoke(evaluation_id, share_id)
    return redirect(url_for("pages.evaluation", evaluation_id=evaluation_id, _anchor="share"))


# API -----------------------------------------------------------------------------------------------------
@api_bp.post("/evaluations/<evaluation_id>/shares")
@operation("Create a read-only share link of a finished evaluation", {201: S.Share, 409: Error})
def create_api(evaluation_id: str):
    """Create a share link: 201 {id, token, url, ...}."""
    share, problem = _create(evaluation_id)
    return problem or (jsonify(share_json(share)), 201)


@api_bp.get("/evaluations/<evaluation_id>/shares")
@operation("An evaluation's share links, revoked ones included", {200: S.ShareList})
def list_api(evaluation_id: str):
    """Every share link of an evaluation, revoked ones included (`active` tells them apart)."""
    get_store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    return jsonify([share_json(s) for s in get_store().list_shares(evaluation_id, include_revoked=True)])


@api_bp.post("/evaluations/<evaluation_id>/shares/<share_id>/revoke")
@operation("Revoke a share link: its address answers 404 from now on", {200: S.Share})
def revoke_api(evaluation_id: str, share_id: str):
    """Revoke a share link: its address answers 404 from now on."""
    return jsonify(share_json(_revoke(evaluation_id, share_id)))


# the shared result -----------------------------------------------------------------------------------------
def link_gone() -> NoReturn:
    """Abort with a 404 that says the share link was revoked or never existed (as JSON for a .json address)."""
    message = _("This link was revoked or never existed.")
    response = jsonify({"error": message}) if request.path.endswith(".json") else \
        Response(render_template("share.html", message=message))
    response.status_code = 404
    abort(response)


def _active_share(token: str) -> dict:
    """The active share link of this token (kept in g for shared_url_for), else a 404 that says why."""
    share = get_store().active_share(token)
    if share is None or get_store().get_evaluation(share["evaluation_id"], with_result=False) is None:
        link_gone()
    g.share = share
    return share


@bp.get("/share/<token>")
def page(token: str):
    """The read-only result page of a share link; its state (page, filters...) is in the query string."""
    return pages.evaluation(_active_share(token)["evaluation_id"])


@bp.get("/share/<token>.json")
@operation("The shared result document (no sign-in: the token is the key)", {200: S.ResultDocument},
           tags=("share",))
def export_json(token: str):
    """The shared result document as a JSON download."""
    return exports.export_json(_active_share(token)["evaluation_id"])


@bp.get("/share/<token>.csv")
def export_csv(token: str):
    """The shared result's per-method metrics as CSV."""
    return exports.export_csv(_active_share(token)["evaluation_id"])


@bp.get("/share/<token>/judgments.csv")
def export_judgments(token: str):
    """Every judgment of the shared result as CSV."""
    return exports.export_judgments(_active_share(token)["evaluation_id"])


@bp.get("/share/<token>/report.html")
def export_report(token: str):
    """The shared result as a self-contained HTML report."""
    return exports.export_report(_active_share(token)["evaluation_id"])


@bp.get("/share/<token>/view/<name>")
def kind_view(token: str, name: str):
    """One of the kind's own views of the shared result (a session's detail, a task's samples)."""
    return pages.kind_view(_active_share(token)["evaluation_id"], name)


@bp.get("/share/<token>/<name>.csv")
def export_download(token: str, name: str):
    """One of the kind's other tables of the shared result as CSV."""
    return exports.export_download(_active_share(token)["evaluation_id"], name)


def shared_url_for(endpoint: str, **values) -> str:
    """url_for for templates under /share/: the result page's links lead to their share equivalents, others
    into the app become "#"."""
    if endpoint in KEPT_ENDPOINTS:
        return url_for(endpoint, **values)
    share = g.get("share")
    target = SHARED_ENDPOINTS.get(endpoint)
    if share is not None and target and values.pop("evaluation_id", None) == share["evaluation_id"]:
        return url_for(target, token=share["token"], **values)
    dataset_share = g.get("dataset_share")
    target = DATASET_SHARED_ENDPOINTS.get(endpoint)
    if dataset_share is not None and target and values.pop("dataset", None) == dataset_share["dataset"]:
        return url_for(target, token=dataset_share["token"], **values)
    current_app.logger.warning("link to %s left out of a share page", endpoint)
    return "#"


@bp.app_context_processor
def shared_mode() -> dict:
    """`shared` for every template; under /share/ also the url_for that keeps visitors on the shared result."""
    if has_request_context() and request.path.startswith(PREFIX):
        return {"shared": True, "url_for": shared_url_for}
    return {"shared": False}


@bp.after_app_request
def share_headers(response: Response) -> Response:
    """No indexing, no Referer carrying the token, no caching, for everything under /share/."""
    if request.path.startswith(PREFIX):
        response.headers["X-Robots-Tag"] = "noindex, nofollow"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
    return response
