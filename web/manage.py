"""Run management pages and API: rename and tag evaluations and uploads, delete them (pipeline/housekeeping.py does it),
and the list of evaluations' forms on the ticked ones (compare, bundle, tag, delete after asking)."""
from __future__ import annotations

from urllib.parse import urlsplit

from flask import Blueprint, Flask, abort, jsonify, redirect, render_template, request, url_for

from common.contract import Error, operation
from pipeline import housekeeping
from pipeline.housekeeping import Refused
from translations import _
from web import get_results, get_store, get_uploads
from web import schemas as S
from web.run_labels import display_titles

bp = Blueprint("manage", __name__)
api_bp = Blueprint("manage_api", __name__, url_prefix="/api")
TABLES = {"evaluations": "get_evaluation", "uploads": "get_upload"}
MAX_SELECTED = 500  # the list's largest page


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


def _back() -> str:
    """Where the list's forms return: the list with its search and page as sent in `back`, if that is the list."""
    back = request.form.get("back") or ""
    parts = urlsplit(back)
    listed = url_for("pages.evaluations")
    return back if not parts.scheme and not parts.netloc and parts.path == listed else listed


def _selected() -> list[str]:
    """The ids ticked on the list (400 when none is)."""
    ids = list(dict.fromkeys(i[:64] for i in request.form.getlist("ids") if i.strip()))[:MAX_SELECTED]
    if not ids:
        abort(400, _("Select one or more evaluations first."))
    return ids


@bp.post("/evaluations/selected")
def selected_page():
    """The list's buttons on the ticked evaluations (`ids`, `action`): compare and bundle go on to those pages, tag
    adds `tags` to each and goes back to the list, delete shows what would be deleted and asks first."""
    ids, action = _selected(), request.form.get("action")
    if action == "compare":
        return redirect(url_for("compare.compare", ids=ids), 303)
    if action == "bundle":
        return redirect(url_for("bundle.download", ids=ids), 303)
    store = get_store()
    records = [record for record in (store.get_evaluation(i, with_result=False) for i in ids) if record]
    if action == "tag":
        try:
            _title, added = housekeeping.labels(None, request.form.get("tags", ""))
            if not added:
                raise Refused(_("Type the tags to add, separated by commas."), 400)
            for record in records:
                _relabel("evaluations", record["id"], record["title"], [*record["tags"], *added])
        except Refused as exc:
            abort(exc.status, str(exc))
        return redirect(_back(), 303)
    if action == "delete":
        for record in records:
            upload = store.get_upload(record["upload_id"])
            record["filename"] = upload["filename"] if upload else ""
        for record, title in zip(records, display_titles(records)):
            record["display_title"] = title
        return render_template("delete_evaluations.html", evaluations=records, back=_back(),
                               running=housekeeping.RUNNING)
    abort(400, _("Choose what to do with the selected evaluations."))


@bp.post("/evaluations/delete")
def delete_selected_page():
    """Delete the evaluations the confirmation page lists (`ids`), then go back to the list; 409 naming any that
    started running meanwhile (the others are deleted)."""
    running = []
    for evaluation_id in _selected():
        try:
            housekeeping.delete_evaluation(get_store(), get_results(), evaluation_id)
        except Refused as exc:
            if exc.status != 404:  # one deleted meanwhile is gone, as asked
                running.append(evaluation_id)
    if running:
        abort(409, _("Still running, so not deleted: %(ids)s. Cancel them first.", ids=", ".join(running)))
    return redirect(_back(), 303)
