"""Run management pages and API: rename and tag evaluations and uploads, delete them (pipeline/housekeeping.py does it)."""
from __future__ import annotations

from flask import Blueprint, Flask, abort, jsonify, redirect, render_template, request, url_for

from common.contract import Error, operation
from pipeline import housekeeping
from pipeline.housekeeping import Refused
from translations import _
from web import get_results, get_store, get_uploads
from web import schemas as S

bp = Blueprint("manage", __name__)
api_bp = Blueprint("manage_api", __name__, url_prefix="/api")
TABLES = {"evaluations": "get_evaluation", "uploads": "get_upload"}


def register(app: Flask, csrf) -> None:
    """Register the pages and the API (exempt from CSRF like the rest of the API)."""
    app.register_blueprint(bp)
    app.register_blueprint(api_bp)
    csrf.exempt(api_bp)


def _relabel(table: str, row_id: str, title, tags) -> dict:
    """Set a row's title and tags; the row as it is now (Refused, 404, when there is none)."""
    store = get_store()
    title, tags = housekeeping.labels(title, tags)
    if not store.set_labels(table, row_id, title, tags):
        raise Refused(_("There is no such evaluation or upload."), 404)
    return {"id": row_id, "title": title, "tags": tags}


def _refused(exc: Refused):
    return jsonify({"error": str(exc), **exc.details}), exc.status


# -- API ---------------------------------------------------------------------------------------------------

@api_bp.patch("/<any(evaluations, uploads):table>/<row_id>")
@operation("Rename and tag an evaluation or an upload", {200: S.LabelsSet, 400: Error}, body=S.Labels)
def relabel_api(table: str, row_id: str, body: dict):
    """Rename and tag: `{"title": "...", "tags": ["..."]}` (a field left out keeps its value)."""
    current = getattr(get_store(), TABLES[table])(row_id) or abort(404)
    try:
        return jsonify(_relabel(table, row_id, body.get("title", current["title"]), body.get("tags", current["tags"])))
    except Refused as exc:
        return _refused(exc)


@api_bp.delete("/evaluations/<evaluation_id>")
@operation("Delete an evaluation (its upload stays)", {204: None, 409: Error})
def delete_evaluation_api(evaluation_id: str):
    """Delete an evaluation (its upload stays): 204, then 404; 409 while it runs."""
    try:
        housekeeping.delete_evaluation(get_store(), get_results(), evaluation_id)
    except Refused as exc:
        return _refused(exc)
    return "", 204


@api_bp.delete("/uploads/<upload_id>")
@operation("Delete an upload (with its evaluations when asked)", {200: S.UploadDeleted, 409: S.InUse},
           query=S.DeleteUploadQuery)
def delete_upload_api(upload_id: str):
    """Delete an upload; one with evaluations only with `?evaluations=delete` (409 naming them otherwise)."""
    try:
        deleted = housekeeping.delete_upload(get_store(), get_uploads(),
                                             get_results(), upload_id,
                                             with_evaluations=request.args.get("evaluations") == "delete")
    except Refused as exc:
        return _refused(exc)
    return jsonify({"deleted_evaluations": deleted}), 200


# -- pages -------------------------------------------------------------------------------------------------

@bp.post("/<any(evaluations, uploads):table>/<row_id>/labels")
def relabel_page(table: str, row_id: str):
    """The title and tags form of a result or upload page."""
    getattr(get_store(), TABLES[table])(row_id) or abort(404)
    try:
        _relabel(table, row_id, request.form.get("title"), request.form.get("tags", ""))
    except Refused as exc:
        abort(exc.status, str(exc))
    if table == "evaluations":
        return redirect(url_for("pages.evaluation", evaluation_id=row_id))
    return redirect(url_for("pages.upload_detail", upload_id=row_id))


@bp.post("/evaluations/<evaluation_id>/delete")
def delete_evaluation_page(evaluation_id: str):
    """Delete an evaluation from its page (the form asks first), then show the list."""
    try:
        housekeeping.delete_evaluation(get_store(), get_results(), evaluation_id)
    except Refused as exc:
        abort(exc.status, str(exc))
    return redirect(url_for("pages.evaluations"))


@bp.route("/uploads/<upload_id>/delete", methods=["GET", "POST"])
def delete_upload_page(upload_id: str):
    """GET: what deleting the upload deletes with it (its evaluations, by name), to confirm; POST: delete."""
    store = get_store()
    upload = store.get_upload(upload_id) or abort(404)
    if request.method == "GET":
        return render_template("delete_upload.html", upload=upload,
                               evaluations=housekeeping.upload_evaluations(store, upload_id))
    try:
        housekeeping.delete_upload(store, get_uploads(), get_results(),
                                   upload_id, with_evaluations=True)
    except Refused as exc:
        abort(exc.status, str(exc))
    return redirect(url_for("pages.evaluations"))
