"""People label the behaviour of a finished conversation evaluation's users: the labelling overview (a slice, each
person's progress, Krippendorff's alpha between people), one page per conversation (the conversation beside the
eleven dimensions, driven by the keyboard), the labels as CSV, and the API that posts and reads them.

Who labels: with accounts on (AUTH=on) the signed-in user, by their name; without, the name a person types on the
overview, kept in their session (the API takes it as `person`)."""
from __future__ import annotations

from typing import Any, Literal

from flask import Blueprint, abort, current_app, jsonify, redirect, render_template, request, session, url_for
from flask_login import current_user
from pydantic import Field, create_model

from common.contract import NOT_BLANK, Answer, Count, Error, Refused, Request, operation
from kinds import host
from kinds.conversation import figures, labelling, people_labels, table
from kinds.conversation.behaviour import DIMENSIONS
from kinds.conversation.format import read_one
from kinds.kind import JobFailed, open_file
from translations import _

bp = Blueprint("conversation_labels", __name__)
api_bp = Blueprint("conversation_labels_api", __name__, url_prefix="/api")
FINISHED = ("done", "incomplete", "cancelled")
GUEST = "labeller"  # the session key of the name a person typed (accounts off)
MAX_LABELS = 100_000  # labels in one request

# one optional field per dimension, its values those of the taxonomy (a 1-5 scale's are whole numbers)
_DIMENSION_FIELDS: dict[str, Any] = {d.key: (Literal[d.values] | None, None) for d in DIMENSIONS}
BehaviourLabels = create_model("BehaviourLabels", __base__=Request, **_DIMENSION_FIELDS)


class PersonLabels(Request):
    """One person's labels of one conversation, named by its index in upload order or by its path."""

    index: Count | None = None
    path: str | None = None
    labels: BehaviourLabels  # type: ignore[valid-type]


class PeopleLabelsBody(Request):
    """Labels of some conversations by one person (`person`: their name when accounts are off; with accounts on the
    token's user, or anyone for an administrator)."""

    person: str | None = Field(None, json_schema_extra={"pattern": NOT_BLANK})
    labels: list[PersonLabels] = Field(min_length=1, max_length=MAX_LABELS)


class Alpha(Answer):
    """Krippendorff's alpha between people on one dimension, with its 95% bootstrap interval."""

    key: str
    level: str
    value: float | None
    low: float | None
    high: float | None
    n: int


class PeopleLabels(Answer):
    """Everyone's labels of the evaluation's conversations, the people, and the agreement between them."""

    labels: list[dict[str, Any]]
    people: list[str]
    agreement: list[Alpha]


class Saved(Answer):
    """How many labels were kept, and the agreement between people now."""

    saved: int
    people: list[str]
    agreement: list[Alpha]


class Refusal(Exception):
    """A request that cannot be served: (HTTP status, message, field or None)."""


def _evaluation(evaluation_id: str) -> dict:
    """A finished conversation evaluation, else Refusal (404 for an unknown one)."""
    record = host.store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    if record["kind"] != "conversation":
        raise Refusal(400, _("People label the behaviour of conversation evaluations only."), None)
    if record["status"] not in FINISHED:
        raise Refusal(409, _("Label the conversations once the evaluation has finished."), None)
    return record


def _upload(record: dict) -> dict:
    return host.store().get_upload(record["upload_id"]) or abort(404)


def _person() -> str | None:
    """The signed-in user's name with accounts on; else the name this visitor typed, if any."""
    if current_app.config["AUTH"] == "on":
        return current_user.name if current_user.is_authenticated else None
    return session.get(GUEST)


def _agreement_rows(found: list[dict], indexes: list[int]) -> list[dict]:
    return labelling.agreement(indexes, people_labels.by_conversation(found))


def _public(agreement: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "label"} for row in agreement]


# -- the pages ---------------------------------------------------------------------------------------------------

def _page_record(evaluation_id: str) -> dict:
    try:
        return _evaluation(evaluation_id)
    except Refusal as exc:
        abort(exc.args[0], exc.args[1])


@bp.get("/evaluations/<evaluation_id>/labelling")
def overview(evaluation_id: str):
    """The slice chosen, each person's progress through it, the agreement between people and where to go on."""
    record = _page_record(evaluation_id)
    upload = _upload(record)
    chosen = labelling.parse_slice(request.args)
    indexes = labelling.indexes(chosen, record, upload, host.site())
    found = people_labels.rows(host.store(), evaluation_id)
    labelled = people_labels.by_conversation(found)
    person = _person()
    mine = [position for position, i in enumerate(indexes) if person not in labelled.get(i, {})] if person else []
    rows = table.summaries(host.site(), upload)
    return render_template(
        "conversation/labelling.html", evaluation=record, slice=chosen, slices=labelling.SLICES, size=len(indexes),
        tasks=sorted({r["task"] for r in rows}), person=person, progress=labelling.progress(indexes, labelled, person),
        agreement=labelling.agreement(indexes, labelled), next_position=mine[0] if mine else None,
        auth_on=current_app.config["AUTH"] == "on", terms=figures.term_labels())


@bp.post("/evaluations/<evaluation_id>/labelling/person")
def set_person(evaluation_id: str):
    """Accounts off: the name this visitor labels under, kept in their session; back to the overview."""
    _page_record(evaluation_id)
    if current_app.config["AUTH"] == "on":
        abort(400, _("With accounts on, you label as the signed-in user."))
    try:
        session[GUEST] = labelling.person_name(request.form.get("person"))
    except labelling.LabelError as exc:
        abort(400, str(exc))
    return redirect(url_for(".overview", evaluation_id=evaluation_id, **labelling.parse_slice(request.form).query()))


def _conversation_at(record: dict, position: int):
    """(slice, its indexes, the conversation's index, the conversation) at a position of the requested slice."""
    upload = _upload(record)
    chosen = labelling.parse_slice(request.args)
    indexes = labelling.indexes(chosen, record, upload, host.site())
    if not 0 <= position < len(indexes):
        abort(404)
    index = indexes[position]
    path = table.summaries(host.site(), upload)[index]["path"]
    with open_file(host.site().file_of(upload)) as stream:
        conversation = read_one(stream, upload["filename"], path)
    return chosen, indexes, index, conversation or abort(404)


@bp.get("/evaluations/<evaluation_id>/labelling/<int:position>")
def label_page(evaluation_id: str, position: int, problem: str | None = None, status: int = 200):
    """One conversation of the slice beside the eleven dimensions, the person's own labels checked."""
    record = _page_record(evaluation_id)
    person = _person()
    if person is None:
        return redirect(url_for(".overview", evaluation_id=evaluation_id, **labelling.parse_slice(request.args).query()))
    chosen, indexes, index, conversation = _conversation_at(record, position)
    labelled = people_labels.by_conversation(people_labels.rows(host.store(), evaluation_id))
    turns = [{"role": t.get("role", ""), "content": t.get("content", ""),
              "content_zh": t["content_zh"] if isinstance(t.get("content_zh"), str)
              and t["content_zh"] != t.get("content") else None} for t in conversation.history if isinstance(t, dict)]
    mine = labelled.get(index, {}).get(person, {})
    done = sum(person in labelled.get(i, {}) for i in indexes)
    return render_template(
        "conversation/label.html", evaluation=record, slice=chosen, position=position, size=len(indexes),
        index=index, c=conversation, turns=turns, dimensions=DIMENSIONS, mine=mine, person=person, done=done,
        others=len(labelled.get(index, {})) - (1 if mine else 0), problem=problem,
        source_labels=figures.source_labels(), terms=figures.term_labels()), status


@bp.post("/evaluations/<evaluation_id>/labelling/<int:position>")
def save_page(evaluation_id: str, position: int):
    """The labelling page's form: keep the person's labels, then the next conversation of the slice (the overview
    after the last)."""
    record = _page_record(evaluation_id)
    person = _person() or abort(400, _("Give your name on the labelling page first."))
    chosen, indexes, index, conversation = _conversation_at(record, position)
    try:
        labels = labelling.form_labels(request.form)
    except labelling.LabelError as exc:
        return label_page(evaluation_id, position, problem=str(exc), status=400)
    people_labels.save(host.store(), evaluation_id,
                       [{"index": index, "path": conversation.path, "person": person, "labels": labels}])
    if position + 1 < len(indexes):
        return redirect(url_for(".label_page", evaluation_id=evaluation_id, position=position + 1, **chosen.query()))
    return redirect(url_for(".overview", evaluation_id=evaluation_id, **chosen.query()))


@bp.post("/evaluations/<evaluation_id>/labelling/rescore")
def rescore_page(evaluation_id: str):
    """Score the evaluation again, so that its result reads the people's labels as they are now."""
    _page_record(evaluation_id)
    try:
        host.runner().rescore(evaluation_id)
    except JobFailed as exc:
        abort(409, str(exc))
    return redirect(url_for("pages.evaluation", evaluation_id=evaluation_id))


@bp.get("/evaluations/<evaluation_id>/people-labels.csv")
def download(evaluation_id: str):
    """Every person's labels, one row per conversation and person."""
    host.store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    header = ("index", "path", "person", *(d.key for d in DIMENSIONS), "updated_at")
    return host.csv_response(header, [(r["index"], r["path"], r["person"], *(r["labels"].get(d.key) for d in DIMENSIONS),
                                       r["updated_at"]) for r in people_labels.rows(host.store(), evaluation_id)],
                             f"people-labels-{evaluation_id}.csv")


# -- the API -----------------------------------------------------------------------------------------------------

def _api_person(given: Any) -> str:
    """Whose labels a request posts: the token's user with accounts on (an administrator may name anyone), else the
    `person` the body gives."""
    if current_app.config["AUTH"] == "on":
        if given is None or given == current_user.name:
            return current_user.name
        if not current_user.is_admin:
            raise Refusal(403, _("With accounts on, your labels are kept under your own name; only an administrator "
                                 "may post someone else's."), "person")
    return labelling.person_name(given)


def _api_rows(record: dict, body: dict) -> list[dict]:
    """The labels a request posts, each checked and its conversation found; LabelError naming the field."""
    person = _api_person(body.get("person"))
    rows = table.summaries(host.site(), _upload(record))
    by_path = {r["path"]: r["index"] for r in rows}
    out = []
    for k, item in enumerate(body["labels"]):
        where = f"labels[{k}]"
        index, path = item.get("index"), item.get("path")
        if (index is None) == (path is None):
            raise labelling.LabelError(where, _("Name the conversation in '%(field)s' by its 'index' or its 'path' "
                                                "(one of the two).", field=where))
        if path is not None and path not in by_path:
            raise labelling.LabelError(f"{where}.path", _("'%(field)s': the evaluation has no conversation of that "
                                                          "path.", field=f"{where}.path"))
        index = by_path[path] if path is not None else index
        if not 0 <= index < len(rows):
            raise labelling.LabelError(f"{where}.index", _("'%(field)s' must be from 0 to %(last)s (the evaluation "
                                                           "has %(count)s conversations).", field=f"{where}.index",
                                                           last=len(rows) - 1, count=len(rows)))
        out.append({"index": index, "path": rows[index]["path"], "person": person,
                    "labels": labelling.checked_labels(item["labels"], f"{where}.labels")})
    return out


@api_bp.post("/evaluations/<evaluation_id>/people-labels")
@operation("Post people's behaviour labels of a finished conversation evaluation's conversations",
           {200: Saved, 400: Refused, 403: Error, 409: Error}, body=PeopleLabelsBody, tags=("evaluations",))
def post_api(evaluation_id: str, body: dict):
    """Keep one person's labels of some conversations (each replacing theirs), then score the evaluation again so that
    its result reads them; answers the agreement between people."""
    try:
        record = _evaluation(evaluation_id)
        people_labels.save(host.store(), evaluation_id, _api_rows(record, body))
        host.runner().rescore(evaluation_id)
    except labelling.LabelError as exc:
        return jsonify({"error": str(exc), "problems": [{"path": exc.field, "message": str(exc)}]}), 400
    except Refusal as exc:
        status, message, field = exc.args
        return jsonify({"error": message, **({"problems": [{"path": field, "message": message}]} if field else {})}), \
            status
    except JobFailed as exc:
        return jsonify({"error": str(exc)}), 409
    found = people_labels.rows(host.store(), evaluation_id)
    return jsonify({"saved": len(body["labels"]), "people": sorted({r["person"] for r in found}),
                    "agreement": _public(_agreement_rows(found, sorted({r["index"] for r in found})))})


@api_bp.get("/evaluations/<evaluation_id>/people-labels")
@operation("Every person's behaviour labels of a conversation evaluation, and the agreement between people",
           {200: PeopleLabels}, tags=("evaluations",))
def get_api(evaluation_id: str):
    """Everyone's labels (by conversation, then person), the people, and Krippendorff's alpha per dimension."""
    host.store().get_evaluation(evaluation_id, with_result=False) or abort(404)
    found = people_labels.rows(host.store(), evaluation_id)
    return jsonify({"labels": found, "people": sorted({r["person"] for r in found}),
                    "agreement": _public(_agreement_rows(found, sorted({r["index"] for r in found})))})
