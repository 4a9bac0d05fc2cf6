"""Run management: titles and tags of evaluations and uploads, the list of evaluations (pages of those a search
and filters match, storage/run_lists.py), and deleting evaluations and uploads with everything stored for them
(database rows in one transaction, then their files; the rows of the kinds' own tables go with their evaluations). What only a kind keeps (mobility's reference sets) its own pages delete.

Plain functions over the Store and the stored files (storage/blobs.py: folders or a bucket); web/manage.py puts them
behind the API and the pages.
"""
from __future__ import annotations

from pathlib import Path

from kinds import registry
from kinds.host import attachment_key
from pipeline.ingest import upload_key
from storage import blobs
from storage.run_lists import RunQuery
from storage.store import Store
from translations import _

RUNNING = ("queued", "running")
MAX_TITLE = 200
MAX_TAGS = 20
MAX_TAG = 40


class Refused(ValueError):
    """A change that cannot be made as asked: the message says why, `status` is the HTTP status that fits."""

    def __init__(self, message: str, status: int = 409, **details):
        super().__init__(message)
        self.status, self.details = status, details


def labels(title, tags) -> tuple[str | None, list[str]]:
    """A title (None when blank) and tags (a list, or text separated by commas) checked and tidied; Refused (400)
    when they are too long or of the wrong type."""
    if title is not None and not isinstance(title, str):
        raise Refused(_("'title' must be text."), 400)
    title = (title or "").strip() or None
    if title is not None and len(title) > MAX_TITLE:
        raise Refused(_("The title is longer than %(n)s characters.", n=MAX_TITLE), 400)
    if isinstance(tags, str):
        tags = tags.split(",")
    if tags is None:
        tags = []
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise Refused(_("'tags' must be a list of texts, or one text with the tags separated by commas."), 400)
    tidy = list(dict.fromkeys(tag.strip() for tag in tags if tag.strip()))
    if len(tidy) > MAX_TAGS or any(len(tag) > MAX_TAG for tag in tidy):
        raise Refused(_("Give at most %(count)s tags of at most %(length)s characters each.",
                        count=MAX_TAGS, length=MAX_TAG), 400)
    return title, tidy


def evaluation_list(store: Store, kind: str | None = None, tag: str | None = None, limit: int = 200) -> list[dict]:
    """Newest evaluations first, of one kind and with one tag when asked, each with its judge model (or reference
    set) and headline scores; headlines missing from older results are computed once and kept."""
    rows = store.list_evaluations(limit=limit, kind=kind or None)
    if tag:
        rows = [row for row in rows if tag in (row["tags"] or [])]
    for row in rows:
        _keep_headline(store, row)
        row["measured_with"] = measured_with(row)
    return rows


def evaluation_page(store: Store, query: RunQuery, limit: int, offset: int) -> tuple[list[dict], int]:
    """One page of the evaluations a query matches (storage/run_lists.py), each with its judge model (or reference
    set) and headline scores, and how many match in all. The search texts of runs added or relabelled since the
    last list are made first; headlines missing from older results are computed once and kept."""
    make_search_texts(store)
    rows, total = store.find_evaluations(query, limit, offset)
    for row in rows:
        _keep_headline(store, row)
        row["measured_with"] = measured_with(row)
    return rows, total


def _keep_headline(store: Store, row: dict) -> None:
    """A finished run's headline scores, computed from its result once when an older version did not keep them."""
    if row["headline"] is None and row["status"] in ("done", "incomplete") and row["kind"] in registry.names():
        record = store.get_evaluation(row["id"])
        if record and record.get("result"):
            headline = registry.scored(row["kind"]).headline(record["result"])
            row["headline"] = headline
            store.set_headline(row["id"], headline)


def make_search_texts(store: Store, batch: int = 1000) -> None:
    """Make the search text and sort title of every run that lacks them (new, relabelled, or from before they
    were kept)."""
    while rows := store.unsearchable_evaluations(batch):
        made = []
        for row in rows:
            made.append({"id": row["id"], "search_text": search_text(row),
                         "sort_title": (row["title"] or row["filename"] or "").casefold()})
        store.set_search_texts(made)


def search_text(evaluation: dict) -> str:
    """What a search of the list of evaluations matches, in lower case: the title, file name, tags, methods, judge
    model(s) (or reference set) and rubric of a run."""
    parts = [evaluation.get("title") or "", evaluation.get("filename") or "", *(evaluation.get("tags") or []),
             *(evaluation.get("methods") or []), measured_with(evaluation), rubric_name(evaluation)]
    return "\n".join(part for part in parts if part).casefold()


def rubric_name(evaluation: dict) -> str:
    """The rubric a run was judged under, as "id version", from its settings; "" for the default or none."""
    rubric = (evaluation.get("settings") or {}).get("rubric")
    if not isinstance(rubric, dict):
        return ""
    return " ".join(str(rubric[key]) for key in ("id", "version") if rubric.get(key))


def measured_with(evaluation: dict) -> str:
    """The judge model(s) of an evaluation, its reference set, or the file of the scores it imported, from its
    settings; "" when there is none."""
    settings = evaluation.get("settings") or {}
    if settings.get("judges"):
        return " + ".join(judge.get("model") or "?" for judge in settings["judges"])
    return settings.get("model") or settings.get("reference_name") or (settings.get("scores") or {}).get(
        "filename") or ""


def delete_evaluation(store: Store, results: str | Path | blobs.Blobs, evaluation_id: str) -> None:
    """Delete a stopped evaluation: its rows, then results/<id>.json; its upload stays. Refused while it runs."""
    evaluation = store.get_evaluation(evaluation_id, with_result=False)
    if evaluation is None:
        raise Refused(_("There is no such evaluation."), 404)
    if evaluation["status"] in RUNNING:
        raise Refused(_("This evaluation is still running; cancel it first, then delete it."))
    store.delete_evaluations([evaluation_id])
    blobs.at(results).delete(f"{evaluation_id}.json")


def upload_evaluations(store: Store, upload_id: str) -> list[dict]:
    """The evaluations of an upload (what deleting it also deletes)."""
    return store.list_evaluations(limit=10_000, upload_id=upload_id)


def delete_upload(store: Store, uploads: str | Path | blobs.Blobs, results: str | Path | blobs.Blobs,
                  upload_id: str, with_evaluations: bool) -> list[str]:
    """Delete an upload and, when `with_evaluations` says so, its evaluations (Refused, naming them, otherwise;
    and while one of them runs): the rows in one transaction, then the stored file and its attached files (unless
    another upload has the same content) and the result files. Returns the ids of the evaluations deleted."""
    upload = store.get_upload(upload_id)
    if upload is None:
        raise Refused(_("There is no such upload."), 404)
    evaluations = upload_evaluations(store, upload_id)
    if any(e["status"] in RUNNING for e in evaluations):
        raise Refused(_("An evaluation of this upload is still running; cancel it first."))
    ids = [e["id"] for e in evaluations]
    if ids and not with_evaluations:
        raise Refused(_("Deleting this upload also deletes its %(count)s evaluations: %(ids)s. Confirm to delete "
                        "them all.", count=len(ids), ids=", ".join(ids)), evaluations=ids)
    attached = store.attachments(upload_id)
    store.delete_evaluations(ids, upload_id=upload_id)
    if not store.uploads_of_file(upload["sha256"]):
        blobs.at(uploads).delete(upload_key(upload["sha256"], upload["kind"], upload["summary"].get("extension")))
    for attachment in attached:  # its attached files too, unless another upload has the same one
        if not store.attachments_of_file(attachment["sha256"], attachment["name"]):
            blobs.at(uploads).delete(attachment_key(attachment["name"], attachment["sha256"],
                                                    attachment["summary"].get("extension") or ""))
    for evaluation_id in ids:
        blobs.at(results).delete(f"{evaluation_id}.json")
    return ids
