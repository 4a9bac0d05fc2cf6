"""Receive an uploaded file: store it by content hash, validate it, and record it."""
from __future__ import annotations

import hashlib
import os
import secrets
import tempfile
from pathlib import Path
from typing import BinaryIO

from benchmarks import KINDS, agentbench, detect_kind
from benchmarks.problems import Problem, Report
from translations import _

CHUNK = 1 << 20


class InvalidUpload(Exception):
    """A file that was rejected; carries the validation report."""

    def __init__(self, report: Report):
        super().__init__(report.problems[0].message if report.problems else "invalid upload")
        self.report = report


def new_id() -> str:
    """A fresh random identifier for an upload or an evaluation."""
    return secrets.token_hex(6)


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


def upload_path(folder: str | Path, sha256: str, kind: str) -> Path:
    """Where the file with this content hash lives (never the user's file name)."""
    return Path(folder) / f"{sha256}{KINDS[kind].extension}"


def _validate_agentbench(stream: BinaryIO, filename: str, names: dict) -> Report:
    """Validate AgentBench outputs; a single overall.json keeps its agent and task names in the summary
    (given, or taken from the uploaded path, which is not stored)."""
    report, run = agentbench.read_any(stream, filename, names.get("agent"), names.get("task"))
    if report.ok and run.source == "overall":
        report.summary["names"] = {"agent": run.tasks[0].agent, "task": run.tasks[0].config_name}
    return report


def ingest(stream: BinaryIO, filename: str, store, folder: str | Path, kind: str | None = None,
           names: dict | None = None) -> dict:
    """Validate and store an uploaded file; returns the upload record or raises InvalidUpload.

    `names` ({"agent", "task"}) name an AgentBench overall.json whose path does not; they are kept in
    the upload's summary under "names", so that scoring reads the file the same way.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tmp, sha256, size = _copy_hashing(stream, folder)
    try:
        if kind is None:
            with open(tmp, "rb") as f:
                kind = detect_kind(f.read(4096), filename, tmp)
        if kind not in KINDS:
            message = _("Unknown benchmark kind '%(kind)s'. Supported kinds: %(kinds)s.", kind=kind,
                        kinds=", ".join(KINDS))
            raise InvalidUpload(Report([Problem(None, "kind", message)], [], {}))
        module = KINDS[kind].module
        with open(tmp, "rb") as f:
            if kind == "agentbench":
                report = _validate_agentbench(f, filename, names or {})
            elif kind == "conversation":  # problems name the uploaded file, never the temporary one
                report = module.read_any(f, filename or "upload")[0]
            else:
                report = module.validate(f)
        if not report.ok:
            raise InvalidUpload(report)
        existing = store.find_upload(sha256, kind)
        if existing and existing["summary"].get("names") == report.summary.get("names"):
            return existing
        target = upload_path(folder, sha256, kind)
        os.replace(tmp, target)
        record = {"id": new_id(), "sha256": sha256, "kind": kind, "filename": Path(filename or "upload").name[:200],
                  "size": size, "summary": report.summary, "warnings": [w.to_dict() for w in report.warnings]}
        store.add_upload(record)
        return store.get_upload(record["id"])
    finally:
        tmp.unlink(missing_ok=True)
