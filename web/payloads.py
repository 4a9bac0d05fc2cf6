"""Data shaped for display, shared by the pages and the JSON API."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Mapping

from kinds import registry
from kinds.kind import Scored, TakesAttachments
from kinds.problems import Problem, Report
from pipeline.ingest import InvalidUpload, attach
from translations import _
from web import get_runner, get_site, get_store, get_uploads


def upload_json(upload: dict) -> dict:
    """What the API says about an upload."""
    return {k: upload[k] for k in ("id", "kind", "filename", "size", "summary", "warnings", "created_at")}


def _speed(evaluation: dict, progress: dict) -> tuple[float | None, float | None]:
    """Judgments per second since this run started, and the seconds left at that pace."""
    if evaluation["status"] != "running" or not evaluation.get("run_started_at"):
        return None, None
    elapsed = (datetime.now(timezone.utc) - datetime.fromisoformat(evaluation["run_started_at"])).total_seconds()
    done = progress["done"] - (evaluation.get("run_done_at_start") or 0)
    if elapsed <= 0 or done <= 0:
        return None, None
    rate = done / elapsed
    return rate, (progress["total"] - progress["done"]) / rate


def attach_sent(upload: dict, name: str, form: Mapping, files: Mapping) -> dict:
    """Attach the file a form or an API request sends (`file`; or, with `source=upload`, the upload's own file) to an
    upload as `name`, with the kind's attachment fields; its record, or InvalidUpload with the problems."""
    kind = registry.get(upload["kind"])
    fields = kind.attachment_fields if isinstance(kind, TakesAttachments) else ()
    options = {k: form[k].strip()[:200] for k in fields if isinstance(form.get(k), str) and form[k].strip()}
    if form.get("source") == "upload":
        with get_site().file_of(upload).open("rb") as stream:
            return attach(stream, upload["filename"], upload, name, get_store(), get_uploads(), options)
    file = files.get("file")
    if file is None or not file.filename:
        raise InvalidUpload(Report([Problem(None, "file", _("Send the file as multipart form field 'file' (or "
                                                            "source=upload to attach the upload's own file)."))]))
    return attach(file.stream, file.filename, upload, name, get_store(), get_uploads(), options)


def upload_options(form: Mapping) -> dict:
    """The kinds' upload fields a form gives (an AgentBench overall.json's agent and task; blank ones left out)."""
    fields = {field for kind in registry.kinds() for field in kind.upload_fields}
    return {k: form[k].strip()[:200] for k in fields if isinstance(form.get(k), str) and form[k].strip()}


def start_options(values: Mapping) -> dict:
    """The kinds' start fields a form or a JSON body gives (a reference set, an annotation), as sent."""
    scored: list[Scored] = registry.having(Scored)
    fields = {field for kind in scored for field in kind.start_fields}
    return {k: values[k] for k in fields if k in values and values[k] not in ("", None)}


def panel_entries(text: str) -> list[dict]:
    """More judges from the upload form's panel field: one per line or comma, `model` or `model@endpoint`."""
    entries = []
    for item in text.replace("\n", ",").split(","):
        model, _at, endpoint = item.strip().partition("@")
        if model.strip():
            entries.append({"model": model.strip(), **({"endpoint": endpoint.strip()} if endpoint.strip() else {})})
    return entries


def evaluation_status(evaluation: dict) -> dict:
    """Status and progress of an evaluation (no result document), with its pace and time left while running, or
    what it waits for instead ("worker", "retry"); and, when it is incomplete, how many judgments failed and why."""
    store = get_store()
    progress = get_runner().job.pipeline.progress(evaluation["id"])  # never backwards while failed ones are asked again
    if not progress["total"]:  # scored without a judge (mobility, AgentBench): one step, done when it is
        progress["total"] = evaluation["total"] or 1
        progress["done"] = progress["total"] if evaluation["status"] == "done" else 0
    waiting = get_runner().waiting(evaluation["id"]) if evaluation["status"] in ("queued", "running") else None
    progress["rate_per_s"], progress["eta_s"] = (None, None) if waiting else _speed(evaluation, progress)
    progress["waiting"] = waiting
    failure = None
    if evaluation["status"] == "incomplete":
        failure = {"failed": progress["failed"], "reason": store.commonest_failure(evaluation["id"])}
    return {k: evaluation[k] for k in ("id", "upload_id", "kind", "status", "methods", "error", "created_at",
                                       "started_at", "finished_at")} | {"progress": progress, "failure": failure}


