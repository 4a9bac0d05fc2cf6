"""Receive an uploaded file: store it by content hash, validate it, and record it; and the same for a file attached to
a stored upload (`Kind.attachments`: a dialogue upload's scores from another judge)."""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import BinaryIO

from kinds import registry
from kinds.host import Site, attachment_key, new_id
from kinds.kind import TakesAttachments
from kinds.problems import Problem, Report
from pipeline import refusals
from storage import blobs
from translations import _

CHUNK = 1 << 20
HEAD = 4096  # the bytes a kind's sniff and upload_hint see of a file's start


class InvalidUpload(Exception):
    """A file that was rejected; carries the validation report."""

    def __init__(self, report: Report):
        super().__init__(report.problems[0].message if report.problems else "invalid upload")
        self.report = report


def _copy_hashing(stream: BinaryIO, folder: Path) -> tuple[Path, str, int]:
    """Copy a stream to a temporary file in folder, returning its path, sha256 and size."""
    digest = hashlib.sha256()
    size = 0
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".incoming-")
    with os.fdopen(fd, "wb") as out:
        while chunk := stream.read(CHUNK):
            digest.update(chunk)
            out.write(chunk)
            size += len(chunk)
    return Path(tmp), digest.hexdigest(), size


def upload_key(sha256: str, kind: str, extension: str | None = None) -> str:
    """The stored name of the file with this content hash (never the user's file name)."""
    return f"{sha256}{extension or registry.get(kind).extension}"


def stored_name(upload: dict) -> str:
    """The stored name of an upload's file (a Site's `name_of`)."""
    return upload_key(upload["sha256"], upload["kind"], upload["summary"].get("extension"))


def ingest(stream: BinaryIO, filename: str, store, files: str | Path | blobs.Blobs, kind: str | None = None,
           options: dict | None = None) -> dict:
    """Validate and store an uploaded file; returns the upload record or raises InvalidUpload.

    The file is checked in a local temporary file, then stored whole in `files` (the uploads folder, or a
    bucket). `options` are the kinds' upload fields (an AgentBench overall.json's agent and task, say); a kind
    keeps what it needs of them in the upload's summary, so that scoring reads the file the same way.
    """
    files = blobs.at(files)
    tmp, sha256, size = _copy_hashing(stream, files.scratch())
    try:
        with open(tmp, "rb") as f:
            head = f.read(HEAD)
        chosen = kind is not None
        if kind is None:
            kind = registry.detect(head, filename, tmp)
        if kind not in registry.names():
            message = _("Unknown benchmark kind '%(kind)s'. Supported kinds: %(kinds)s.", kind=kind,
                        kinds=", ".join(registry.names()))
            raise InvalidUpload(Report([Problem(None, "kind", message)], [], {}))
        with open(tmp, "rb") as f:
            report = registry.get(kind).validate(f, filename or "upload", options or {})
        if not report.ok:
            raise InvalidUpload(refusals.explain(report, registry.get(kind), chosen, head, filename or "upload", tmp))
        existing = store.find_upload(sha256, kind)
        if existing and existing["summary"].get("names") == report.summary.get("names"):
            return existing
        key = upload_key(sha256, kind, report.summary.get("extension"))
        if not files.exists(key):  # named by content: the same bytes are already there
            files.put_file(key, tmp)
        record = {"id": new_id(), "sha256": sha256, "kind": kind, "filename": Path(filename or "upload").name[:200],
                  "size": size, "summary": report.summary, "warnings": [w.to_dict() for w in report.warnings]}
        store.add_upload(record)
        return store.get_upload(record["id"])
    finally:
        tmp.unlink(missing_ok=True)


def attach(stream: BinaryIO, filename: str, upload: dict, name: str, store, files: str | Path | blobs.Blobs,
           options: dict | None = None) -> dict:
    """Check a file attached to a stored upload with the upload's kind (`name`: one of its `attachments`; `options`:
    its `attachment_fields`), then store it by content hash and record it; returns the attachment's record (the one
    recorded before, for the same file read the same way) or raises InvalidUpload with the problems (nothing is
    stored then)."""
    files = blobs.at(files)
    kind = registry.get(upload["kind"])
    if not isinstance(kind, TakesAttachments) or name not in kind.attachments:
        message = _("Nothing named %(name)s can be attached to an upload of the kind %(label)s.", name=name,
                    label=kind.label)
        raise InvalidUpload(Report([Problem(None, "", message)], [], {}))
    tmp, sha256, size = _copy_hashing(stream, files.scratch())
    try:
        site = Site(store, files, stored_name)
        with open(tmp, "rb") as f:
            report = kind.check_attachment(name, f, filename or name, upload, options or {}, site)
        if not report.ok:
            raise InvalidUpload(report)
        for existing in store.attachments(upload["id"], name):  # the same file, read the same way: attached already
            if existing["sha256"] == sha256 and existing["summary"] == report.summary:
                return existing
        key = attachment_key(name, sha256, report.summary.get("extension") or "")
        if not files.exists(key):  # named by content: the same bytes are already there
            files.put_file(key, tmp)
        record = {"id": new_id(), "upload_id": upload["id"], "name": name, "sha256": sha256,
                  "filename": Path(filename or name).name[:200], "size": size, "summary": report.summary,
                  "warnings": [w.to_dict() for w in report.warnings]}
        store.add_attachment(record)
        return store.get_attachment(record["id"])
    finally:
        tmp.unlink(missing_ok=True)
