"""The JSON API (docs/api.md)."""
from __future__ import annotations

from flask import Blueprint, abort, current_app, jsonify, request, url_for

from common.contract import Error, Refused, RescoreState, operation
from common.version import product_version
from kinds import registry
from kinds.kind import attachment_names
from pipeline import chunked_uploads
from pipeline.evaluations import create_evaluation
from pipeline.ingest import InvalidUpload, ingest
from pipeline.judge_requests import RequestError
from translations import _
from web import (
    get_judge_settings,
    get_rescores,
    get_runner,
    get_site,
    get_store,
    get_uploads,
    openapi,
    run_list,
    signed_in_name,
)
from web import schemas as S
from web.compare import CompareError, load_runs, requested_ids
from web.paired_view import PairedError, answer, choose_baseline, choose_correction
from web.payloads import attach_sent, evaluation_status, start_options, upload_json, upload_options

bp = Blueprint("api", __name__, url_prefix="/api")
DEFAULT_PER_PAGE = 200  # the list's one page before it had pages: the default answer stays what it was


@bp.get("/openapi.json")
@operation("This document: the API's OpenAPI 3.1 description", {200: S.OpenAPIDocument})
def openapi_document():
    """The OpenAPI 3.1 document of the API (made from the operations' own contracts)."""
    return jsonify(openapi.document(current_app, product_version() or "unknown"))


def problem_response(exc: InvalidUpload):
    """400 with every problem of a rejected file."""
    report = exc.report
    return jsonify({"error": _("The file was rejected: %(count)s problem(s) found. Fix them and upload again.",
                               count=len(report.problems)),
                    "problems": [p.to_dict() for p in report.problems], "truncated": report.truncated}), 400


@bp.post("/uploads")
@operation("Upload a file: it is checked, and stored when it passes", {201: S.Upload, 400: Refused},
           form=S.UploadForm, files=("file",))
def create_upload():
    """Upload a file (multipart field `file`, optional `kind`; `agent` and `task` for a lone overall.json)."""
    file = request.files.get("file")
    if file is None or not file.filename:
        return jsonify({"error": _("Send the file as multipart form field 'file'."), "problems": []}), 400
    try:
        upload = ingest(file.stream, file.filename, get_store(), get_uploads(),
                        request.form.get("kind") or None, upload_options(request.form))
    except InvalidUpload as exc:
        return problem_response(exc)
    return jsonify(upload_json(upload)), 201


@bp.post("/uploads/chunked")
@operation("Start a resumable upload of a file over the single-request limit", {201: S.ChunkedUpload, 400: Error},
           body=S.ChunkedStart)
def start_chunked(body: dict):
    """Start a resumable upload: `{filename, size, kind?, agent?, task?}`; answers its id and the chunk size."""
    options = {"kind": body.get("kind") or None, **upload_options(body)}
    size = body.get("size")
    if isinstance(size, float):  # JSON's 1024.0 is the whole number 1024 (the contract refused any other float)
        size = int(size)
    try:
        started = chunked_uploads.start(get_store(), get_uploads(), body.get("filename"),
                                        size, options, current_app.config["MAX_CONTENT_LENGTH"])
    except chunked_uploads.ChunkError as exc:
        return _chunk_error(exc)
    return jsonify(started), 201


@bp.get("/uploads/chunked/<upload_id>")
@operation("How far a resumable upload has come", {200: S.ChunkedUpload, 404: Error})
def chunked_status(upload_id: str):
    """How far a resumable upload has come: `{id, offset, size}`."""
    try:
        return jsonify(chunked_uploads.status(get_store(), get_uploads(), upload_id,
                                              current_app.config["MAX_CONTENT_LENGTH"]))
    except chunked_uploads.ChunkError as exc:
        return _chunk_error(exc)


@bp.put("/uploads/chunked/<upload_id>")
@operation("Send one chunk at the upload's offset", {200: S.ChunkOffset, 400: S.ChunkRefused, 404: Error,
                                                      409: S.ChunkRefused}, query=S.ChunkQuery,
           raw="application/octet-stream")
def chunked_append(upload_id: str):
    """One chunk, the request's body, at `?offset=` (where the upload stands), with its `X-Chunk-SHA256`."""
    try:
        offset = int(request.args.get("offset", ""))
    except ValueError:
        offset = None
    try:
        return jsonify(chunked_uploads.append(get_store(), get_uploads(), upload_id, offset,
                                              request.get_data(cache=False), request.headers.get("X-Chunk-SHA256")))
    except chunked_uploads.ChunkError as exc:
        return _chunk_error(exc)


@bp.post("/uploads/chunked/<upload_id>/finish")
@operation("Check the assembled file like any upload", {201: S.UploadAtPage, 400: Refused, 404: Error,
                                                         409: Error})
def chunked_finish(upload_id: str):
    """Check the assembled file like any upload: 201 with the upload, or 400 with its problems."""
    store, files = get_store(), get_uploads()
    try:
        stream, described = chunked_uploads.assembled(store, files, upload_id)
    except chunked_uploads.ChunkError as exc:
        return _chunk_error(exc)
    options = dict(described["options"])
    try:
        with stream:
            upload = ingest(stream, described["filename"], store, files, options.pop("kind", None), options)
    except InvalidUpload as exc:
        return problem_response(exc)
    finally:
        chunked_uploads.discard(store, files, upload_id)
    return jsonify({**upload_json(upload), "url": url_for("pages.upload_detail", upload_id=upload["id"])}), 201


def _chunk_error(exc: chunked_uploads.ChunkError):
    return jsonify({"error": str(exc), **({"offset": exc.offset} if exc.offset is not None else {})}), exc.status


@bp.get("/uploads/<upload_id>")
@operation("An upload's summary and warnings", {200: S.Upload})
def get_upload(upload_id: str):
    """One upload's summary and warnings."""
    upload = get_store().get_upload(upload_id) or abort(404)
    return jsonify(upload_json(upload))


@bp.post("/uploads/<upload_id>/<name>")
@operation("Attach a file to an upload (dialogue: `scores`, another judge's scores of its replies): it is checked "
           "against the upload, and stored when it passes", {201: S.Attachment, 400: Refused, 404: Error},
           form=S.AttachmentForm, files=("file",))
def create_attachment(upload_id: str, name: str):
    """Attach a file (multipart `file`, or `source=upload` for the upload's own) to an upload as `name`, one of its
    kind's attachments (dialogue: `scores`, with `rubric`)."""
    upload = get_store().get_upload(upload_id) or abort(404)
    if name not in attachment_names(registry.get(upload["kind"])):
        abort(404)
    try:
        attachment = attach_sent(upload, name, request.form, request.files)
    except InvalidUpload as exc:
        return problem_response(exc)
    return jsonify(attachment), 201


@bp.get("/uploads/<upload_id>/<name>")
@operation("The files attached to an upload under one name (dialogue: scores)", {200: S.Attachments, 404: Error})
def list_attachments(upload_id: str, name: str):
    """The files attached to an upload as `name`, oldest first."""
    upload = get_store().get_upload(upload_id) or abort(404)
    if name not in attachment_names(registry.get(upload["kind"])):
        abort(404)
    return jsonify(get_store().attachments(upload_id, name))


@bp.post("/evaluations")
@operation("Start an evaluation of an upload", {202: S.Started, 400: Error}, body=S.evaluation_request)
def create(body: dict):
    """Start an evaluation of an upload: `{upload_id, methods?, judge?, judges?}` (`judges`: a panel, a list of
    judge settings) and the kind's own fields (`reference` for mobility, `annotate` for conversations, `samples`
    for dialogue)."""
    try:
        evaluation = create_evaluation(get_store(), body["upload_id"], body.get("methods"), body.get("judge"),
                                       get_judge_settings().environ(), start_options(body), body.get("judges"),
                                       signed_in_name())
    except RequestError as exc:
        return jsonify({"error": str(exc)}), 400
    get_runner().start(evaluation["id"])
    return jsonify({"id": evaluation["id"], "status": evaluation["status"],
                    "url": url_for("pages.evaluation", evaluation_id=evaluation["id"], _external=True)}), 202


@bp.get("/evaluations")
@operation("Evaluations: search, filters, sort and pages", {200: S.EvaluationList, 400: Error}, query=S.ListQuery)
def list_evaluations():
    """A page of the evaluations that match (web/run_list.py: `q`, `kind`, `status`, `tag`, `started_by`, `since`,
    `until`, `sort`, `figure`, `page`, `per_page`; newest first, 200 a page by default), each with its title,
    display title, tags, judge model or reference set, and headline scores; how many match in all, and the
    neighbouring pages, in the headers X-Total-Count, X-Page, X-Per-Page and Link."""
    try:
        listing = run_list.read_listing(request.args, DEFAULT_PER_PAGE)
    except ValueError as exc:
        return jsonify({"error": str(exc)}), 400
    rows, total = run_list.runs(listing)
    response = jsonify([{k: e[k] for k in ("id", "upload_id", "kind", "status", "methods", "created_at", "finished_at",
                                         "filename", "title", "tags", "headline", "measured_with", "display_title",
                                         "started_by")} for e in rows])
    links = [f'<{url_for("api.list_evaluations", **listing.link(page=page), _external=True)}>; rel="{rel}"'
             for page, rel in ((listing.page + 1, "next"), (listing.page - 1, "prev"))
             if 1 <= page <= run_list.last_page(listing, total)]
    response.headers.update({"X-Total-Count": str(total), "X-Page": str(listing.page),
                           "X-Per-Page": str(listing.per_page), **({"Link": ", ".join(links)} if links else {})})
    return response


@bp.get("/evaluations/<evaluation_id>")
@operation("An evaluation's status, progress and result document", {200: S.Evaluation})
def get_evaluation(evaluation_id: str):
    """Status, progress and (when there is one) the result document."""
    evaluation = get_store().get_evaluation(evaluation_id) or abort(404)
    return jsonify({**evaluation_status(evaluation), "result": evaluation.get("result")})


@bp.get("/evaluations/<evaluation_id>/rescore")
@operation("Whether a finished evaluation is being scored again, after people's ratings of it changed",
           {200: RescoreState, 404: Error})
def rescore_state(evaluation_id: str):
    """The state of the evaluation's last rescore job (queued, running, done, failed, cancelled); 404 when it never
    had one. The pages and the API that change people's ratings start it and point here."""
    get_store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    state = get_rescores().state(evaluation_id)
    if state is None:
        return jsonify({"error": _("Evaluation %(id)s has not been scored again.", id=evaluation_id)}), 404
    return jsonify(state)


@bp.post("/evaluations/<evaluation_id>/cancel")
@operation("Stop a queued or running evaluation", {202: S.EvaluationStatus, 409: Error})
def cancel(evaluation_id: str):
    """Stop a queued or running evaluation; what was judged so far is kept."""
    store = get_store()
    store.get_evaluation(evaluation_id, with_result=False) or abort(404)
    if not get_runner().cancel(evaluation_id):
        return jsonify({"error": _("This evaluation is not running.")}), 409
    return jsonify(evaluation_status(store.get_evaluation(evaluation_id, with_result=False) or abort(404))), 202


@bp.post("/evaluations/<evaluation_id>/resume")
@operation("Continue a cancelled or failed evaluation", {202: S.EvaluationStatus, 409: Error})
def resume(evaluation_id: str):
    """Continue a cancelled or failed evaluation from where it stopped."""
    return _restart(evaluation_id, rerun_failed=False)


@bp.post("/evaluations/<evaluation_id>/rerun-failed")
@operation("Ask the judge again for every failed or unparsed judgment", {202: S.EvaluationStatus, 409: Error})
def rerun_failed(evaluation_id: str):
    """Ask the judge again for every failed or unparsed judgment (answers already paid for are kept)."""
    return _restart(evaluation_id, rerun_failed=True)


def _restart(evaluation_id: str, rerun_failed: bool):
    store = get_store()
    evaluation = store.get_evaluation(evaluation_id, with_result=False) or abort(404)
    if not get_runner().resume_one(evaluation_id, rerun_failed=rerun_failed):
        if evaluation["status"] in ("done", "incomplete"):
            return jsonify({"error": _("This evaluation has finished: there is nothing left to resume. Ask the "
                                       "judge again for its failed judgments (rerun-failed), or start a new "
                                       "evaluation.")}), 409
        return jsonify({"error": _("This evaluation is still running.")}), 409
    return jsonify(evaluation_status(store.get_evaluation(evaluation_id, with_result=False) or abort(404))), 202


@bp.get("/evaluations/<evaluation_id>/sessions")
@operation("A page of per-sample detail (dialogue)", {200: S.SessionsPage}, query=S.SessionsQuery)
def sessions(evaluation_id: str):
    """A page of per-sample detail (dialogue: messages, replies, scores and the judge's reasoning)."""
    evaluation = get_store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    page = registry.scored(evaluation["kind"]).samples(evaluation, request.args, get_site())
    return jsonify(page) if page is not None else abort(404)


@bp.get("/compare")
@operation("Paired differences of finished evaluations against a baseline", {200: S.Compared, 400: Error,
                                                                              404: Error}, query=S.CompareQuery)
def compare():
    """Paired differences of finished evaluations against a baseline (docs/api.md): `ids` (two or more),
    `baseline` (default the earliest created), `correction` (holm or bh), `metric` and `max_drop` for the regression flag."""
    ids = requested_ids(request.args)
    unknown = [i for i in ids if get_store().get_evaluation(i, with_result=False) is None]
    if unknown:
        return jsonify({"error": _("No evaluation has the id %(ids)s.", ids=", ".join(unknown))}), 404
    try:
        max_drop = request.args.get("max_drop")
        try:
            drop = float(max_drop) if max_drop not in (None, "") else None
        except ValueError:
            raise PairedError(_("max_drop must be a number.")) from None
        runs = load_runs(ids)
        body = answer(runs, choose_baseline(ids, request.args), choose_correction(request.args),
                      request.args.get("metric") or None, drop)
    except (CompareError, PairedError) as exc:
        return jsonify({"error": str(exc)}), 400
    return jsonify(body)
