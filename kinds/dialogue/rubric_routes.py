"""The rubrics' page of the settings (/settings/rubrics: list, view, download, add from a file, delete) and their API
(/api/rubrics), over the dialogue kind's own table (rubric_store.py). Adding and deleting need an administrator when
accounts are on, as the judge settings do (`DialogueKind.admin_paths`)."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, abort, jsonify, redirect, render_template, request, url_for

from common.contract import Answer, Answers, Error, Refused, Request, operation
from common.downloads import attachment
from kinds import host, rubrics
from kinds.dialogue import rubric_files, rubric_store
from kinds.rubrics import Rubric, RubricError
from kinds.rubrics.reading import MAX_BYTES
from translations import _

ADMIN_PATHS = ("/settings/rubrics", "/api/rubrics")  # the page's and the API's
bp = Blueprint("rubrics", __name__, url_prefix=ADMIN_PATHS[0])
api_bp = Blueprint("rubrics_api", __name__, url_prefix="/api")
MEDIA = {"json": "application/json", "yaml": "application/yaml"}


class RubricDimension(Answer):
    """A dimension: its key, labels (en, zh, ko), scale and what its levels mean."""

    key: str
    label: dict[str, str]
    min: float
    max: float
    integer: bool
    levels: dict[str, str]


class RubricSummary(Answer):
    """A rubric: its id, version and SHA-256, titles, dimensions, headline formula, yes/no question (its labels, or
    null), whether it is built in, what the judge sees, its judging languages and answer formats."""

    id: str
    version: str
    sha256: str
    title: dict[str, str]
    description: dict[str, str]
    headline: str
    dimensions: list[RubricDimension]
    binary: dict[str, str] | None
    builtin: bool
    context: list[str]
    languages: list[str]
    answer: str
    binary_answer: str | None


class RubricDetail(RubricSummary):
    """A rubric with its whole canonical document (the file, as JSON)."""

    document: dict[str, Any]


class RubricList(Answers[RubricSummary]):
    """The built-in rubrics, then those added, newest first."""


class RubricForm(Request):
    """The multipart fields of a new rubric, beside its `file`: none."""


class NotAdded(Exception):
    """A rubric file that cannot be added: (HTTP status, message, problems)."""


def _sent_file() -> bytes:
    """The rubric file a request carries: the multipart field `file`, else the body; NotAdded when it has neither."""
    file = request.files.get("file")
    if file is not None and file.filename:
        return file.stream.read(MAX_BYTES + 1)
    data = b"" if request.mimetype in ("multipart/form-data", "application/x-www-form-urlencoded") \
        else request.get_data(cache=False)
    if not data.strip():
        raise NotAdded(400, _("Send the rubric file (YAML or JSON) as the multipart field 'file', or as the request's "
                              "body."), [])
    return data


def _add(data: bytes) -> Rubric:
    """Check a rubric file and keep it; NotAdded with its problems (400), or why it cannot be kept (409)."""
    try:
        rubric = rubrics.read(data)
    except RubricError as exc:
        raise NotAdded(400, _("The rubric file has problems; nothing was stored."), exc.problems) from exc
    try:
        return rubric_store.add(host.store(), rubric)
    except rubric_store.RubricProblem as exc:
        raise NotAdded(409, str(exc), []) from exc


def _found(name: str) -> Rubric:
    """A rubric by id or SHA-256 (one deleted from the list too, by its SHA-256), else a 404."""
    return rubric_store.find(host.store(), name) or abort(404)


def _delete(name: str) -> None:
    """Hide a rubric (by id: every version kept under it) from the list; NotAdded when it is built in (409) or not
    kept (404)."""
    try:
        rubric_store.delete(host.store(), name)
    except rubric_store.RubricProblem as exc:
        raise NotAdded(409 if rubric_store.find(None, name) else 404, str(exc), []) from exc


# -- the settings' page ------------------------------------------------------------------------------------------


def _page(status: int = 200, **context: Any):
    listed = [rubric_files.summary(r) for r in rubric_store.listed(host.store())]
    return render_template("dialogue/rubrics.html", rubrics=listed, added=request.args.get("added"),
                           **{"error": None, "problems": [], "filename": None, **context}), status


@bp.get("")
def page():
    """Every rubric (the built-ins, then those added), with the form that adds one."""
    return _page()


@bp.post("")
def add_page():
    """Add the uploaded rubric file and show it in the list; or every problem found, naming line and field."""
    file = request.files.get("file")
    if file is None or not file.filename:
        return _page(400, error=_("Choose a rubric file (YAML or JSON)."))
    try:
        rubric = _add(file.stream.read(MAX_BYTES + 1))
    except NotAdded as exc:
        status, message, problems = exc.args
        return _page(status, error=message, problems=problems, filename=file.filename)
    return redirect(url_for("rubrics.page", added=rubric.sha256, _anchor=f"rubric-{rubric.sha256[:12]}"))


@bp.get("/<name>")
def view(name: str):
    """One rubric: its dimensions and levels, headline formula, yes/no question, prompts and answer formats."""
    rubric = _found(name)
    questions = [("fine", rubric.document["prompts"]), *([("binary", rubric.document["binary"]["prompts"])]
                                                         if rubric.has_binary else [])]
    return render_template("dialogue/rubric.html", rubric=rubric_files.summary(rubric), questions=questions,
                           name=rubric.id if rubric.builtin else rubric.sha256,
                           listed=rubric in rubric_store.listed(host.store()))


@bp.get("/<name>/<any(json, yaml):form>")
def download(name: str, form: str):
    """A rubric's file: its canonical JSON (whose SHA-256 is the rubric's) or YAML (the same rubric read back)."""
    rubric = _found(name)
    text = rubric_files.json_text(rubric) if form == "json" else rubric_files.yaml_text(rubric)
    return Response(text, mimetype=MEDIA[form],
                    headers={"Content-Disposition": attachment(f"{rubric.id}-{rubric.version}.{form}")})


@bp.post("/<name>/delete")
def delete_page(name: str):
    """Take a rubric off the list (evaluations judged under it keep it); built-ins cannot be."""
    try:
        _delete(name)
    except NotAdded as exc:
        if exc.args[0] == 404:
            abort(404)
        return _page(exc.args[0], error=exc.args[1])
    return redirect(url_for("rubrics.page"))


# -- the API -------------------------------------------------------------------------------------------------------


@api_bp.get("/rubrics")
@operation("Every rubric: the built-ins, then those added", {200: RubricList}, tags=("rubrics",))
def list_api():
    """The built-in rubrics, then those added and not deleted, newest first."""
    return jsonify([rubric_files.summary(r) for r in rubric_store.listed(host.store())])


@api_bp.get("/rubrics/<name>")
@operation("One rubric, by id or SHA-256, with its document", {200: RubricDetail}, tags=("rubrics",))
def get_api(name: str):
    """One rubric by id (a built-in, else the newest added under it) or by SHA-256, with its whole document."""
    return jsonify(rubric_files.detail(_found(name)))


@api_bp.post("/rubrics")
@operation("Add a rubric: its file (YAML or JSON) as the multipart field `file`, or as the body",
           {201: RubricSummary, 400: Refused, 409: Error}, form=RubricForm, files=("file",), raw="application/yaml",
           tags=("rubrics",))
def create_api():
    """Add a rubric: 201 with it; 400 with every problem of its file (line, field, message); 409 when its id is a
    built-in's, or its id and version are kept with other content."""
    try:
        rubric = _add(_sent_file())
    except NotAdded as exc:
        status, message, problems = exc.args
        body = {"error": message}
        if status == 400:
            body.update(problems=[p.to_dict() for p in problems], truncated=False)
        return jsonify(body), status
    return jsonify(rubric_files.summary(rubric)), 201


@api_bp.delete("/rubrics/<name>")
@operation("Take a rubric off the list (by id: every version added under it)", {204: None, 409: Error},
           tags=("rubrics",))
def delete_api(name: str):
    """Take a rubric off the list: 204; 404 when none is kept under that name, 409 for a built-in."""
    try:
        _delete(name)
    except NotAdded as exc:
        if exc.args[0] == 404:
            abort(404)
        return jsonify({"error": exc.args[1]}), exc.args[0]
    return "", 204
