"""The plug-in API: all a kind may use of the application that hosts it.

A kind package imports this module, `kinds.kind` (the interface it implements), the shared modules of
`kinds/` (problems, readers/, stats, comparisons, paired_stats, paired_rows, agreement, figures), the `judge` package,
`common/` and `translations`; never `web/`, `pipeline/`, `storage/` nor another kind's package
(tests/kinds/test_boundaries.py checks).
What it gets of the host is typed here:

- `Store`: the store's methods kinds call (uploads, evaluations, judgments, settings), and a small generic API
  (`rows`, `row`, `execute`, `transaction`) over the kind's own tables, which it declares as `Table`s
  (`Kind.tables`): the store creates them with its own schema steps and deletes an evaluation's rows with it.
- `Files`: the stored files (uploads and whatever a kind keeps there, e.g. reference sets); `StoredFile`, one of them.
- `Site`: the store and the stored files together, as a kind's pages and jobs see them.
- `Runner`: what a kind's pages may ask of the evaluation runner (`rescore`, in the foreground).
- `Rescores`: scoring a finished evaluation again as a job (`later`: in the background; `now`; `state`).
- For a kind's Flask pages: `store()`, `site()`, `runner()`, `rescores()` (the running application's) and
  `csv_response`.
"""
from __future__ import annotations

import io
import os
import secrets
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping, Protocol

from flask import Response, current_app

from common.downloads import attachment
from common.safe_csv import SafeWriter

# -- the store ---------------------------------------------------------------------------------------------------


class Transaction(Protocol):
    """Statements run in one transaction of the store (`Store.transaction()`): all of them, or none."""

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        """Run one statement (`:name` parameters); the number of rows it changed."""
        ...

    def execute_many(self, sql: str, rows: Iterable[Mapping[str, Any]]) -> int:
        """Run one statement per row of parameters, in batches; the number of rows changed."""
        ...


class Store(Protocol):
    """What kinds use of the store (storage/store.py's Store is one)."""

    def get_upload(self, upload_id: str) -> dict | None:
        """One upload by id, or None."""
        ...

    def get_attachment(self, attachment_id: str) -> dict | None:
        """One file attached to an upload (`Kind.attachments`) by id, with its summary, or None."""
        ...

    def attachments(self, upload_id: str, name: str | None = None) -> list[dict]:
        """The files attached to an upload (of one name, when given), oldest first."""
        ...

    def get_evaluation(self, evaluation_id: str, with_result: bool = True) -> dict | None:
        """One evaluation by id (with its result document unless asked not to), or None."""
        ...

    def list_evaluations(self, limit: int = 200, kind: str | None = None, upload_id: str | None = None) -> list[dict]:
        """Newest evaluations first, without their result documents."""
        ...

    def set_session_offsets(self, upload_id: str, rows: Iterable[tuple[int, str, int]]) -> None:
        """Record (index, session id, byte offset) of every session of an upload."""
        ...

    def session_offsets(self, upload_id: str, start: int, limit: int, query: str = "") -> list[dict]:
        """A page of sessions of an upload (index, id, byte offset), optionally filtered by id."""
        ...

    def count_sessions(self, upload_id: str, query: str = "") -> int:
        """Number of sessions of an upload, optionally filtered by id."""
        ...

    def judgments(self, evaluation_id: str, session_indexes: Iterable[int] | None = None) -> list[dict]:
        """All judgments of an evaluation, or of some of its sessions."""
        ...

    def iter_judgments(self, evaluation_id: str, batch: int = 5000,
                       columns: Iterable[str] | None = None) -> Iterator[dict]:
        """Every judgment of an evaluation in key order, read a batch at a time."""
        ...

    def judged_rounds(self, evaluation_id: str) -> set[tuple[str, int]]:
        """(session id, round) of every round the evaluation has a judgment of."""
        ...

    def usage(self, evaluation_id: str) -> list[dict]:
        """Per method and mode: judgments asked, attempts, cache hits, failures, tokens."""
        ...

    def progress(self, evaluation_id: str) -> dict:
        """Counts of judgments by status."""
        ...

    def failures(self, evaluation_id: str, limit: int = 50) -> list[dict]:
        """Failed and unparsed judgments with their reasons, first ones first."""
        ...

    def get_setting(self, name: str, default: Any = None) -> Any:
        """A stored setting (JSON value), or default."""
        ...

    def set_setting(self, name: str, value: Any) -> None:
        """Store a setting as JSON."""
        ...

    def delete_setting(self, name: str) -> None:
        """Forget a setting."""
        ...

    def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict]:
        """The rows a query over a kind's own tables gives, as dicts."""
        ...

    def row(self, sql: str, params: Mapping[str, Any] | None = None) -> dict | None:
        """The first row a query gives, or None."""
        ...

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        """Run one statement in a transaction of its own; the number of rows it changed."""
        ...

    def transaction(self) -> AbstractContextManager[Transaction]:
        """A transaction, committed at the end of the `with` block (rolled back on an error)."""
        ...


@dataclass(frozen=True)
class Step:
    """One schema step of a kind's table, numbered among the store's own steps (storage/migrations.py): `apply`
    takes the connection and the database's DDL words (storage/migrations.py's DIALECTS)."""

    version: int
    name: str
    apply: Callable[[Any, dict], None]


@dataclass(frozen=True)
class Table:
    """A table only one kind keeps. `evaluation_column` names the column of the evaluation a row belongs to (its
    rows are deleted with that evaluation), None when rows belong to no evaluation; `evaluation_settings` names
    settings `<name>:<evaluation id>` deleted with the evaluation too; `steps` create and change the table."""

    name: str
    steps: tuple[Step, ...]
    evaluation_column: str | None = None
    evaluation_settings: tuple[str, ...] = ()


def new_id() -> str:
    """A fresh random identifier (of an upload, an evaluation, a share, a reference set...)."""
    return secrets.token_hex(6)


# -- the stored files --------------------------------------------------------------------------------------------


class StoredFile(Protocol):
    """A stored file as a kind gets it (`Job.path`, `Site.file_of`): a `Path` in a local folder, or a handle on an
    object in a bucket. Read it with `open_file`, which gives a seekable binary file in both cases."""

    name: str

    def open(self, mode: str = "rb") -> BinaryIO:
        """The file for reading, seekable."""
        ...

    def exists(self) -> bool:
        """Whether the file is stored."""
        ...


def open_file(file: "str | os.PathLike | StoredFile") -> BinaryIO:
    """A stored file (or a path) opened for reading: a seekable binary file object, whatever keeps it."""
    return open(file, "rb") if isinstance(file, (str, os.PathLike)) else file.open("rb")


class Files(Protocol):
    """The stored files (storage/blobs.py's Blobs: a folder or a bucket), by key."""

    def file(self, key: str) -> Any:
        """The stored file of a key (a StoredFile)."""
        ...

    def open(self, key: str) -> BinaryIO:
        """A stored file for reading, seekable; FileNotFoundError when there is none."""
        ...

    def put_file(self, key: str, path: Path) -> None:
        """Store a local file under a key, whole or not at all."""
        ...

    def exists(self, key: str) -> bool:
        """Whether a key is stored."""
        ...

    def delete(self, key: str) -> None:
        """Forget a key (nothing when it is not there)."""
        ...

    def scratch(self) -> Path:
        """A local folder for temporary files."""
        ...


@dataclass(frozen=True)
class Site:
    """What a kind's pages and jobs may read: the store and the stored files; `name_of` gives the key of an upload's
    stored file (by content hash, never by the user's file name)."""

    store: Store
    files: Files
    name_of: Callable[[dict], str]

    def file_of(self, upload: dict) -> StoredFile:
        """An upload's stored file."""
        return self.files.file(self.name_of(upload))

    def file_of_attachment(self, attachment: dict) -> StoredFile:
        """The stored file of a file attached to an upload (`Store.get_attachment`)."""
        return self.files.file(attachment_key(attachment["name"], attachment["sha256"],
                                              attachment["summary"].get("extension") or ""))


def attachment_key(name: str, sha256: str, extension: str) -> str:
    """Where a file attached as `name` is kept among the stored files: in a folder of that name, by content hash
    (never by the user's file name)."""
    return f"{name}/{sha256}{extension}"


# -- the runner --------------------------------------------------------------------------------------------------


class Runner(Protocol):
    """What a kind's pages may ask of the evaluations (pipeline/evaluations.py's Evaluations is one)."""

    def rescore(self, evaluation_id: str) -> dict:
        """Score a finished evaluation again from what is stored; the new result document (JobFailed if it cannot)."""
        ...


# -- a kind's Flask pages ----------------------------------------------------------------------------------------


def store() -> Store:
    """The running application's store."""
    return current_app.extensions["store"]


def site() -> Site:
    """The running application's store and stored uploads."""
    return current_app.extensions["site"]


class Rescores(Protocol):
    """Scoring finished evaluations again as jobs (pipeline/rescores.py's Rescoring), for a kind's pages."""

    def later(self, evaluation_id: str) -> dict:
        """Score it again in the background (a job on the evaluations' backend); its state at once: status, error,
        requested_at, finished_at. JobFailed when it has not finished."""
        ...

    def now(self, evaluation_id: str) -> dict:
        """Score it again in the foreground; the new result document (JobFailed if it cannot be)."""
        ...

    def state(self, evaluation_id: str) -> dict | None:
        """The state of its last rescore (as `later` gives it), None when it never had one."""
        ...


def runner() -> Runner:
    """The running application's evaluations (the job type its backend runs, whichever backend it is)."""
    return current_app.extensions["runner"].job


def rescores() -> Rescores:
    """The running application's rescore jobs (on the backend the evaluations run on)."""
    return current_app.extensions["rescores"]


def csv_response(header: tuple, rows: Iterable[Iterable], filename: str) -> Response:
    """A CSV download (cells neutralised by common/safe_csv.py), UTF-8 with BOM so spreadsheet programs read Chinese
    correctly."""
    out = io.StringIO()
    writer = SafeWriter(out)
    writer.writerow(header)
    for row in rows:
        writer.writerow(row)
    return Response("\ufeff" + out.getvalue(), mimetype="text/csv",
                    headers={"Content-Disposition": attachment(filename)})
