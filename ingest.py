"""Receive an uploaded file: store it by content hash, validate it, and record it."""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import BinaryIO

from benchmarks import registry
from benchmarks.problems import Problem, Report
from store import new_id
from translations import _

CHUNK = 1 << 20


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


def upload_path(folder: str | Path, sha256: str, kind: str, extension: str | None = None) -> Path:
    """Where the file with this content hash lives (never the user's file name)."""
    return Path(folder) / f"{sha256}{extension or registry.get(kind).extension}"


def ingest(stream: BinaryIO, filename: str, store, folder: str | Path, kind: str | None = None,
           options: dict | None = None) -> dict:
    """Validate and store an uploaded file; returns the upload record or raises InvalidUpload.

    `options` are the kinds' upload fields (an AgentBench overall.json's agent and task, say); a kind keeps
    what it needs of them in the upload's summary, so that scoring reads the file the same way.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tmp, sha256, size = _copy_hashing(stream, folder)
    try:
        if kind is None:
            with open(tmp, "rb") as f:
                kind = registry.detect(f.read(4096), filename, tmp)
        if kind not in registry.names():
            message = _("Unknown benchmark kind '%(kind)s'. Supported kinds: %(kinds)s.", kind=kind,
                        kinds=", ".join(registry.names()))
            raise InvalidUpload(Report([Problem(None, "kind", message)], [], {}))
        with open(tmp, "rb") as f:
            report = registry.get(kind).validate(f, filename or "upload", options or {})
        if not report.ok:
            raise InvalidUpload(report)
        existing = store.find_upload(sha256, kind)
        if existing and existing["summary"].get("names") == report.summary.get("names"):
            return existing
        target = upload_path(folder, sha256, kind, report.summary.get("extension"))
        os.replace(tmp, target)
        record = {"id": new_id(), "sha256": sha256, "kind": kind, "filename": Path(filename or "upload").name[:200],
                  "size": size, "summary": report.summary, "warnings": [w.to_dict() for w in report.warnings]}
        store.add_upload(record)
        return store.get_upload(record["id"])
    finally:
        tmp.unlink(missing_ok=True)
