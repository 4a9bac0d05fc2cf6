"""HTML pages: upload, upload detail, evaluation list, result page, exports, language switch."""
from __future__ import annotations

import functools
import gzip
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    redirect,
    render_template,
    request,
    send_file,
    send_from_directory,
    url_for,
)

from judge import JudgeConfig, test_connection
from kinds import figures, registry
from kinds.kind import Scored, attachment_names
from kinds.problems import Report
from pipeline import chunked_uploads
from pipeline.evaluations import create_evaluation
from pipeline.ingest import InvalidUpload, ingest
from pipeline.judge_requests import RequestError, judge_config
from translations import COOKIE, LANGUAGES, _
from web import (
    get_judge_settings,
    get_runner,
    get_site,
    get_store,
    get_uploads,
    live,
    run_list,
    security_headers,
    signed_in_name,
)
from web import schemas as S
from web.judge_settings import VARIABLES
from web.payloads import attach_sent, evaluation_status, panel_entries, start_options, upload_options

bp = Blueprint("pages", __name__)
ROOT = Path(__file__).resolve().parent.parent


def judge_problem() -> str | None:
    """What is missing from the judge's configuration, or None when it can be used."""
    try:
        return judge_config({}, get_judge_settings().environ()).problem()
    except ValueError as exc:
        return str(exc)


def _upload_page(status: int = 200, **context):
    """The upload page, with what the form needs and whatever went wrong."""
    limit = current_app.config["MAX_CONTENT_LENGTH"]
    return render_template("upload.html", judge_problem=judge_problem(), max_mb=limit / (1024 * 1024),
                           chunk_bytes=chunked_uploads.chunk_bytes(limit), **context), status


@bp.get("/")
def index():
    """The upload page."""
    return _upload_page()


@bp.post("/uploads")
def upload():
    """Receive the upload form; show its problems inline or go on to the upload's page."""
    file = request.files.get("file")
    if file is None or not file.filename:
        return _upload_page(400, error=_("Choose a file to upload."))
    try:
        record = ingest(file.stream, file.filename, get_store(), get_uploads(), request.form.get("kind") or None,
                        upload_options(request.form))
    except InvalidUpload as exc:
        return _upload_page(400, report=exc.report, filename=file.filename)
    return redirect(url_for("pages.upload_detail", upload_id=record["id"]))


@bp.get("/uploads/<upload_id>")
def upload_detail(upload_id: str, error: str | None = None, status: int = 200, refused: Report | None = None):
    """An upload's summary and warnings, with the form that starts an evaluation and the files attached to it (and
    the problems of one that was refused)."""
    record = get_store().get_upload(upload_id) or abort(404)
    kind = registry.get(record["kind"])
    attachments = {name: get_store().attachments(upload_id, name) for name in attachment_names(kind)}
    return render_template(kind.template("upload"), upload=record, kind=kind, error=error,
                           judge_problem=judge_problem(), defaults=effective_config(), endpoints=judge_endpoint_list(),
                           attachments=attachments, refused=refused,
                           **kind.upload_context(record, get_site())), status


@bp.post("/uploads/<upload_id>/attach/<name>")
def attach(upload_id: str, name: str):
    """The upload page's form that attaches a file (dialogue: another judge's scores); back to the page, which lists
    it, or shows its problems."""
    record = get_store().get_upload(upload_id) or abort(404)
    if name not in attachment_names(registry.get(record["kind"])):
        abort(404)
    try:
        attach_sent(record, name, request.form, request.files)
    except InvalidUpload as exc:
        return upload_detail(upload_id, status=400, refused=exc.report)
    return redirect(url_for("pages.upload_detail", upload_id=upload_id, _anchor=name))


@bp.get("/uploads/<upload_id>/file")
def upload_file(upload_id: str):
    """The stored file of an upload (a simulation's dialogue file, say), downloaded under its own name."""
    record = get_store().get_upload(upload_id) or abort(404)
    stored = get_site().file_of(record)
    if not stored.exists():
        abort(404)
    return send_file(stored.open("rb"), as_attachment=True, download_name=record["filename"],
                     mimetype="application/octet-stream")


@bp.post("/uploads/<upload_id>/evaluate")
def evaluate(upload_id: str):
    """Start an evaluation from the form and go to its result page."""
    form = request.form
    overrides = {k: form[k].strip() for k in ("endpoint", "model", "temperature", "language", "batch")
                 if form.get(k, "").strip()}
    panel = panel_entries(form.get("panel", ""))
    judges = [{k: overrides.pop(k) for k in ("endpoint", "model") if k in overrides}, *panel] if panel else None
    try:
        evaluation = create_evaluation(get_store(), upload_id, form.getlist("methods") or None, overrides,
                                       get_judge_settings().environ(), start_options(form), judges, signed_in_name())
    except RequestError as exc:
        return upload_detail(upload_id, error=str(exc), status=400)
    get_runner().start(evaluation["id"])
    return redirect(url_for("pages.evaluation", evaluation_id=evaluation["id"]))


@bp.get("/evaluations")
def evaluations():
    """A page of the evaluations the search and filters in the query string match (web/run_list.py), newest first
    unless sorted otherwise, with the count and page links, and the forms that tag, delete and compare the ticked."""
    error, status = None, 200
    try:
        listing = run_list.read_listing(request.args, run_list.PAGE_SIZES[0])
    except ValueError as exc:
        error, status = str(exc), 400
        listing = run_list.read_listing({}, run_list.PAGE_SIZES[0])
    rows, total = run_list.runs(listing)
    last = run_list.last_page(listing, total)
    if listing.page > last:  # past the end (runs deleted since the link was made): the last page
        listing = replace(listing, page=last, args=listing.link(page=last))
        rows, total = run_list.runs(listing)
    store = get_store()
    return render_template("evaluations.html", evaluations=rows, listing=listing, total=total, last_page=last,
                           shown=run_list.shown(listing, len(rows), total), error=error,
                           tags=sorted({t for tags in store.tag_lists() for t in tags}),
                           figures=store.figure_names(), starters=store.starters(),
                           statuses=S.Status.__args__, page_sizes=run_list.PAGE_SIZES,
                           by_kind={k.name: k for k in registry.kinds()}, scored_kinds=registry.having(Scored)), status


@bp.get("/evaluations/<evaluation_id>")
def evaluation(evaluation_id: str):
    """The result page; shows live progress, and the figures of the judgments stored so far (web/live.py), until the
    evaluation ends. Its view state is in the query string."""
    record = get_store().get_evaluation(evaluation_id) or abort(404)
    return render_template(registry.scored(record["kind"]).template("result"), **result_context(record),
                           live_view=live.live_html(record))


def result_context(record: dict) -> dict:
    """Everything a kind's result page is rendered with (for the page, its share twin and the offline report)."""
    kind = registry.scored(record["kind"])
    context: dict[str, Any] = {"evaluation": record, "upload": get_store().get_upload(record["upload_id"]),
                               "kind": kind, "status": evaluation_status(record), "result": record.get("result")}
    context.update(kind.result_context(record, request.args, get_site()))
    if context["result"]:
        context["figures"] = kind.figures(context["result"], record, request.args)
    return context


@bp.get("/evaluations/<evaluation_id>/view/<name>")
def kind_view(evaluation_id: str, name: str):
    """One of the kind's own views of an evaluation (a session's detail, a task's samples), by name."""
    record = get_store().get_evaluation(evaluation_id) or abort(404)
    view = registry.scored(record["kind"]).views().get(name) or abort(404)
    template, context = view(record, request.args, get_site()) or abort(404)
    return render_template(template, evaluation=record, **context)


@bp.post("/evaluations/<evaluation_id>/<any(cancel, resume, 'rerun-failed'):action>")
def control(evaluation_id: str, action: str):
    """Cancel, resume or re-run the failed judgments from the result page."""
    get_store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    if action == "cancel":
        get_runner().cancel(evaluation_id)
    else:
        get_runner().resume_one(evaluation_id, rerun_failed=action == "rerun-failed")
    return redirect(url_for("pages.evaluation", evaluation_id=evaluation_id))


@bp.route("/settings", methods=["GET", "POST"])
def settings():
    """Judge settings: endpoint, model, concurrency, temperature, prompt language, prices, write-only key."""
    judge_settings = get_judge_settings()
    message = error = None
    status = 200
    form = judge_settings.saved()
    if request.method == "POST":
        form = {name: request.form.get(name, "") for name in VARIABLES}
        try:
            judge_settings.save(form, request.form.get("api_key"), clear_key=bool(request.form.get("clear_key")))
            message = _("Settings saved. New evaluations use them.")
        except ValueError as exc:
            error, status = str(exc), 400
    return render_template("settings.html", form=form, message=message, error=error, **_settings_context()), status


@bp.post("/settings/test")
def settings_test():
    """Make one real call to the chosen judge endpoint and show its answer or the exact error."""
    try:
        outcome = test_connection(judge_config({"endpoint": request.form.get("endpoint") or None},
                                               get_judge_settings().environ()))
    except ValueError as exc:
        outcome = {"ok": False, "error": str(exc), "answer": "", "latency_s": None}
    return render_template("settings.html", form=get_judge_settings().saved(), test=outcome,
                           tested=request.form.get("endpoint"), **_settings_context())


@bp.post("/settings/endpoints")
def add_endpoint():
    """Name a judge endpoint: its base URL, its own key, the models it may be asked for and its prices."""
    form = request.form
    try:
        get_judge_settings().add_endpoint(form.get("name", ""), form.get("base_url", ""), form.get("models", ""),
                                          form.get("api_key"), form.get("price_prompt", ""),
                                          form.get("price_completion", ""))
    except ValueError as exc:
        return render_template("settings.html", form=get_judge_settings().saved(), endpoint_error=str(exc),
                               endpoint_form=form, **_settings_context()), 400
    return redirect(url_for("pages.settings"))


@bp.post("/settings/endpoints/<name>/remove")
def remove_endpoint(name: str):
    """Forget a judge endpoint saved on this page, with its key."""
    get_judge_settings().remove_endpoint(name) or abort(404)
    return redirect(url_for("pages.settings"))


def judge_endpoint_list() -> list[dict]:
    """The judge endpoints in force, public fields only (empty when they are misconfigured)."""
    try:
        return [e.public() for e in get_judge_settings().endpoints().values()]
    except ValueError:
        return []


def effective_config() -> JudgeConfig:
    """The judge configuration an evaluation started now would use (environment and settings page), or the
    defaults while the settings are invalid (the settings page says why)."""
    try:
        return JudgeConfig.from_env(get_judge_settings().environ())
    except ValueError:
        return JudgeConfig()


def _settings_context() -> dict:
    config = effective_config()
    return {"effective": config.public(), "key_set": get_judge_settings().key_is_set(),
            "key_problem": get_judge_settings().key_problem(),
            "judge_problem": judge_problem(), "variables": VARIABLES, "endpoints": judge_endpoint_list(),
            "environ_defaults": {name: get_judge_settings().base_env.get(var, "") for name, var in VARIABLES.items()}}


@bp.get("/lang/<code>")
def set_language(code: str):
    """Switch the interface language (kept in a cookie) and go back where the user was."""
    target = request.referrer or url_for("pages.index")
    if urlsplit(target).netloc not in ("", request.host):
        target = url_for("pages.index")
    response = redirect(target)
    if code in LANGUAGES:
        response.set_cookie(COOKIE, code, max_age=365 * 24 * 3600, **security_headers.cookie_flags())
    return response


@bp.get("/sample_data.jsonl")
def sample_data():
    """The sample file, ready to upload."""
    return send_from_directory(ROOT, "sample_data.jsonl", as_attachment=True, mimetype="application/jsonl")


@functools.cache
def _gzipped(path: Path) -> bytes:
    """A script compressed once (Plotly's 1.2 MB becomes about 420 KB on the wire)."""
    return gzip.compress(path.read_bytes(), compresslevel=9)


def plotly_file() -> Path:
    """The Plotly bundle pages load: the dashboard's partial one, unless the app's config names another file
    (`PLOTLY_JS_FILE`; bench/bench_lighthouse.py serves the full bundle that way to measure the difference)."""
    return Path(current_app.config.get("PLOTLY_JS_FILE") or figures.PLOTLY_JS_FILE)


@bp.get("/vendor/plotly.min.js")
def plotly_js():
    """Plotly's JavaScript, served from this repository (no CDN, works offline), gzipped when accepted."""
    path = plotly_file()
    if "gzip" not in request.accept_encodings:
        return send_from_directory(path.parent, path.name, mimetype="text/javascript", max_age=86400)
    response = Response(_gzipped(path), mimetype="text/javascript")
    response.headers.update({"Content-Encoding": "gzip", "Vary": "Accept-Encoding",
                             "Cache-Control": "public, max-age=86400"})
    return response
