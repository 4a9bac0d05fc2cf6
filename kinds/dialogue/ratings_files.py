"""People's ratings in and out of files, for the result page's form, the API and the CLI alike: a ratings file
(human_file.py) checked and attached to a finished dialogue evaluation, every rater's ratings written back as one
(CSV or JSONL, the format it is read in), and the evaluation scored again once its ratings changed."""
from __future__ import annotations

import io
import json
from typing import IO, Any, Iterable, Iterator, Mapping

from common.safe_csv import SafeWriter
from kinds import host
from kinds.dialogue import human_file, rating_store, result_rubric
from kinds.host import Store
from kinds.kind import JobFailed
from kinds.problems import Report
from translations import _

FINISHED = ("done", "incomplete", "cancelled")
FORMATS = ("csv", "jsonl")
MEDIA_TYPES = {"csv": "text/csv", "jsonl": "application/jsonl"}


class NotAttached(Exception):
    """Ratings that cannot be attached, read or removed: (HTTP status, message, validation report or None)."""


def dialogue_evaluation(store: Store, evaluation_id: str) -> dict:
    """A dialogue evaluation (without its result), else NotAttached (404 for an unknown one)."""
    evaluation = store.get_evaluation(evaluation_id, with_result=False)
    if evaluation is None:
        raise NotAttached(404, _("There is no evaluation %(id)s.", id=evaluation_id), None)
    if evaluation["kind"] != "dialogue":
        raise NotAttached(400, _("People's ratings can be attached to dialogue evaluations only."), None)
    return evaluation


def finished_evaluation(store: Store, evaluation_id: str) -> dict:
    """A finished dialogue evaluation, else NotAttached (404 for an unknown one, 409 for one still running)."""
    evaluation = dialogue_evaluation(store, evaluation_id)
    if evaluation["status"] not in FINISHED:
        raise NotAttached(409, _("Attach people's ratings once the evaluation has finished."), None)
    return evaluation


def attach(store: Store, evaluation_id: str, stream: IO[bytes], filename: str, rater: str | None = None,
           source: str = "file") -> tuple[Report, list[dict]]:
    """Check a ratings file against a finished evaluation and keep its ratings, in place of the earlier ratings of
    the raters it names (its rows without a rater are `rater`'s, else the file's name); the report (its summary
    says how many ratings, by which raters) and the rows kept. NotAttached with the report when it has problems:
    then nothing is kept. The caller has the evaluation scored again (rescore_later(), rescore())."""
    evaluation = finished_evaluation(store, evaluation_id)
    rubric = result_rubric.of_record(evaluation, store)
    report, rows = human_file.read(stream, filename, store.judged_rounds(evaluation_id), evaluation["methods"],
                                   rubric, rater)
    if not report.ok:
        raise NotAttached(400, _("The ratings file has problems; nothing was attached."), report)
    rating_store.add_ratings(store, evaluation_id, rows, source)
    return report, rows


def rescore(evaluation_id: str) -> dict:
    """Score the evaluation again now that its people's ratings (or reviews) changed, in the foreground (the rescore
    job, run here: the CLI, a reviewed judgment); the new result document. NotAttached (409) when it cannot be."""
    try:
        return host.rescores().now(evaluation_id)
    except JobFailed as exc:
        raise NotAttached(409, str(exc), None) from exc


def rescore_later(evaluation_id: str) -> dict:
    """Have the evaluation scored again in the background now that its people's ratings changed (a rescore job on
    the evaluations' backend: a thread, or the Celery workers); its state at once (status queued, ...). NotAttached
    (409) when it cannot be."""
    try:
        return host.rescores().later(evaluation_id)
    except JobFailed as exc:
        raise NotAttached(409, str(exc), None) from exc


def header(rubric: result_rubric.RubricBlock) -> tuple[str, ...]:
    """The columns of a ratings file under a rubric, as written: rater, the reply, and every rating it may give."""
    return (human_file.RATER, *human_file.KEYS, *human_file.ratings(rubric))


def file_rows(rows: Iterable[Mapping[str, Any]], rubric: result_rubric.RubricBlock) -> Iterator[dict]:
    """People's ratings (rating_store.people_ratings rows) as the rows of a ratings file: each column of header()
    with its value, the verdict as `binary`."""
    for row in rows:
        yield {c: row.get(human_file.column(c)) for c in header(rubric)}


def csv_text(rows: Iterable[Mapping[str, Any]], rubric: result_rubric.RubricBlock) -> str:
    """People's ratings as a CSV ratings file (header first; cells a spreadsheet cannot run, common/safe_csv.py)."""
    out = io.StringIO()
    writer = SafeWriter(out)
    writer.writerow(header(rubric))
    for row in file_rows(rows, rubric):
        writer.writerow(row.values())
    return out.getvalue()


def jsonl_text(rows: Iterable[Mapping[str, Any]], rubric: result_rubric.RubricBlock) -> str:
    """People's ratings as a JSONL ratings file: one object per rating, with the ratings it gives."""
    return "".join(json.dumps({k: v for k, v in row.items() if v is not None}, ensure_ascii=False) + "\n"
                   for row in file_rows(rows, rubric))


def as_file(rows: Iterable[Mapping[str, Any]], rubric: result_rubric.RubricBlock, form: str) -> str:
    """People's ratings as a ratings file in `form` (csv or jsonl)."""
    return csv_text(rows, rubric) if form == "csv" else jsonl_text(rows, rubric)


def export(store: Store, evaluation: dict, form: str, rater: str | None = None) -> str:
    """An evaluation's people's ratings (every rater's, or one's) as a ratings file in `form` (csv or jsonl), which
    attached again gives the same ratings."""
    rows = rating_store.people_ratings(store, evaluation["id"], rater)
    return as_file(rows, result_rubric.of_record(evaluation, store), form)
