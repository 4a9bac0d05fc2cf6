"""Reference sets of the mobility benchmark: the page that lists and adds them, and their API."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from flask import Blueprint, abort, current_app, jsonify, redirect, render_template, request, url_for

from common.contract import Answer, Answers, Error, Request, operation
from kinds import host
from kinds.mobility import reference_files as mobility_reference
from kinds.mobility import reference_sets as references
from translations import _

bp = Blueprint("references", __name__)
api_bp = Blueprint("references_api", __name__, url_prefix="/api")


class ReferenceForm(Request):
    """The multipart fields of a new reference set, beside its `file`."""

    name: str | None = None
    source: Literal["huggingface", ""] | None = None


class ReferenceSet(Answer):
    """A mobility reference set: its name, content hash, source and summary."""

    id: str
    name: str
    sha256: str
    source: str
    summary: dict[str, Any]
    created_at: str


class ReferenceSets(Answers[ReferenceSet]):
    """Every reference set, newest first."""


def _add_from_request() -> dict:
    """Add the reference set sent as multipart `file` (a ZIP of the official layout, or four-key JSON) or,
    with `source=huggingface`, downloaded from the benchmark's dataset; raises ReferenceProblem."""
    name = request.form.get("name", "")
    if request.form.get("source") == "huggingface":
        try:
            data = mobility_reference.download(current_app.config.get("HF_BASE_URL", mobility_reference.HF_BASE_URL))
        except mobility_reference.ReferenceError as exc:
            raise references.ReferenceProblem(str(exc)) from exc
        return references.add(host.store(), host.site().files, data, name or "beijing",
                              f"huggingface:{mobility_reference.HF_DATASET}")
    file = request.files.get("file")
    if file is None or not file.filename:
        raise references.ReferenceProblem(_("Choose a ZIP of the groundtruth folder, or a four-key JSON file."))
    try:
        data = mobility_reference.load_any(file.stream, file.filename)
    except mobility_reference.ReferenceError as exc:
        raise references.ReferenceProblem(str(exc)) from exc
    return references.add(host.store(), host.site().files, data,
                          name or Path(file.filename).stem, f"upload:{Path(file.filename).name[:100]}")


@bp.route("/references", methods=["GET", "POST"])
def page():
    """List the reference sets; add one from a file or from the benchmark's dataset."""
    error, status = None, 200
    if request.method == "POST":
        try:
            record = _add_from_request()
            return redirect(url_for("references.page", added=record["id"]))
        except references.ReferenceProblem as exc:
            error, status = str(exc), 400
    return render_template("mobility/references.html", references=references.records(host.store()), error=error,
                           added=request.args.get("added")), status


@bp.post("/references/<reference_id>/delete")
def delete_page(reference_id: str):
    """Delete a reference set from its page (the form asks first); an error says which evaluations use it."""
    try:
        references.delete(host.store(), host.site().files, reference_id)
    except references.ReferenceProblem as exc:
        return render_template("mobility/references.html", references=references.records(host.store()),
                               error=str(exc), added=None), 409
    return redirect(url_for("references.page"))


@api_bp.delete("/references/<reference_id>")
@operation("Delete a reference set that no evaluation uses", {204: None, 409: Error}, tags=("references",))
def delete_api(reference_id: str):
    """Delete a reference set that no evaluation uses: 204; 404 when there is none, 409 while one uses it."""
    store = host.store()
    if references.get(store, reference_id) is None:
        abort(404)
    try:
        references.delete(store, host.site().files, reference_id)
    except references.ReferenceProblem as exc:
        return jsonify({"error": str(exc)}), 409
    return "", 204


@api_bp.get("/references")
@operation("Every mobility reference set", {200: ReferenceSets}, tags=("references",))
def list_api():
    """Every reference set with its size and summary."""
    return jsonify(references.records(host.store()))


@api_bp.post("/references")
@operation("Add a mobility reference set: a ZIP of the official layout or four-key JSON, or the benchmark's own "
           "(source=huggingface)", {201: ReferenceSet, 400: Error}, form=ReferenceForm, files=("file",),
           tags=("references",))
def create_api():
    """Add a reference set: multipart `file` and `name`, or `source=huggingface`."""
    try:
        return jsonify(_add_from_request()), 201
    except references.ReferenceProblem as exc:
        return jsonify({"error": str(exc)}), 400


@api_bp.get("/references/<reference_id>")
@operation("One reference set", {200: ReferenceSet}, tags=("references",))
def get_api(reference_id: str):
    """One reference set."""
    return jsonify(references.get(host.store(), reference_id) or abort(404))
