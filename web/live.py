"""The live view of a running evaluation: its result document from the judgments stored so far, as JSON, and as
the part of its result page that shows it (the kind's `live` template), which the page fetches again while the
judge answers (static/js/result.js, at most once a second)."""
from __future__ import annotations

import threading
from collections import OrderedDict

import jinja2
from flask import Blueprint, Response, abort, current_app, jsonify, render_template, request
from markupsafe import Markup

from common.contract import Error, operation
from kinds import registry
from kinds.kind import JobFailed, Scored
from pipeline.live_results import RUNNING, LiveResults, Partial
from translations import select_locale
from web import get_site, get_store
from web import schemas as S

bp = Blueprint("live", __name__)
RENDERED_KEPT = 16  # live views kept rendered: the pages open on one evaluation share one rendering
_KEEPING = threading.Lock()


def get_live_results() -> LiveResults:
    """The application's partial result documents of running evaluations (pipeline/live_results.py)."""
    return current_app.extensions["live_results"]


def live_template(kind: Scored) -> str | None:
    """The kind's template of the live view, None when it has none (a kind scored in one step)."""
    try:
        current_app.jinja_env.get_template(kind.template("live"))
    except jinja2.TemplateNotFound:
        return None
    return kind.template("live")


@bp.get("/api/evaluations/<evaluation_id>/partial")
@operation("A running evaluation's result document made from the judgments stored so far",
           {200: S.PartialResult, 409: Error})
def partial_result(evaluation_id: str):
    """While the evaluation runs, the result document of the judgments stored so far (`partial`: true, `judgments`:
    how many it was made from; null until the first is stored); once it has ended, its final result document."""
    record = get_store().get_evaluation(evaluation_id) or abort(404)
    progress = get_store().progress(evaluation_id)
    if record["status"] not in RUNNING:
        return jsonify({"id": evaluation_id, "status": record["status"], "partial": False,
                        "judgments": progress["done"], "total": progress["total"], "result": record.get("result")})
    try:
        partial = get_live_results().partial(record)
    except JobFailed as exc:
        return jsonify({"error": str(exc)}), 409
    return jsonify({"id": evaluation_id, "status": record["status"], "partial": True,
                    "judgments": partial.judgments if partial else progress["done"],
                    "total": partial.total if partial else progress["total"],
                    "result": partial.result if partial else None})


@bp.get("/evaluations/<evaluation_id>/live")
def live_view(evaluation_id: str):
    """The live part of a running evaluation's result page, as an HTML fragment (304 while it has not changed)."""
    record = get_store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    template = live_template(registry.scored(record["kind"])) or abort(404)
    try:
        partial = get_live_results().partial(record)
    except JobFailed:
        partial = None
    tag = f"{evaluation_id}-{partial.made_at if partial else 0}-{select_locale()}-{request.query_string.decode()}"
    if request.if_none_match.contains(tag):
        return Response(status=304, headers={"ETag": f'"{tag}"', "Cache-Control": "no-cache"})
    response = Response(_rendered(tag, template, record, partial), mimetype="text/html")
    response.set_etag(tag)
    response.headers["Cache-Control"] = "no-cache"  # asked again each time, answered 304 while it is the same
    return response


def live_html(record: dict) -> Markup | None:
    """The live view rendered for the result page of a running evaluation, None when its kind has none or it is
    not running."""
    if record["status"] not in RUNNING:
        return None
    template = live_template(registry.scored(record["kind"]))
    if template is None:
        return None
    try:
        partial = get_live_results().partial(record)
    except JobFailed:
        partial = None
    return Markup(render_template(template, **live_context(record, partial)))


def _rendered(tag: str, template: str, record: dict, partial: Partial | None) -> str:
    """The live view rendered once per partial document, language and query, however many pages ask for it."""
    kept: OrderedDict[str, str] = current_app.extensions.setdefault("live_views", OrderedDict())
    html = kept.get(tag)
    if html is None:
        html = render_template(template, **live_context(record, partial))
        with _KEEPING:
            kept[tag] = html
            while len(kept) > RENDERED_KEPT:
                kept.popitem(last=False)
    return html


def live_context(record: dict, partial: Partial | None) -> dict:
    """What a kind's live template is rendered with: the kind's result page values of the partial document (as
    `result`), `live` (the partial document: judgments, total) and its figures; `live` is None before the first
    judgment is stored."""
    kind = registry.scored(record["kind"])
    context: dict = {"evaluation": record, "kind": kind, "live": partial}
    if partial is not None:
        context.update(kind.result_context({**record, "result": partial.result}, request.args, get_site()))
        context["live_figures"] = kind.figures(context["result"], record, request.args)
    return context
