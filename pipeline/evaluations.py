"""Evaluations: created from a request, then run as a job type (pipeline/job.py) by either backend: opened (its file,
its judges), planned (its pending judgments recorded once), judged block by block of sessions, judgments that failed
in an outage asked again after a pause, then scored with the result kept. An evaluation that brings its judgments
with it (`Kind.given_judgments`: imported scores) has them recorded when it is scored, with no judge call.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Callable, Mapping

from kinds import registry
from kinds.host import new_id
from kinds.kind import Job, JobFailed, Judged, Scored, StartError, StartRequest, calls_judge
from pipeline.evaluation_steps import Pipeline
from pipeline.job import Block, Progress
from pipeline.judge_requests import RequestError, check_judges
from pipeline.refusals import not_scored
from storage import blobs
from storage.store import Store
from translations import _

BLOCK_JUDGMENTS = 5_000  # judgments of a block one thread judges (memory does not grow with the evaluation)
SHARED_BLOCK_JUDGMENTS = 1_000  # judgments of a block when workers share them, about (CELERY_BLOCK_JUDGMENTS)
MAX_BLOCKS = 2000  # blocks per evaluation at most when shared (each block reads the upload's file once)

Work = tuple[Scored, Job]  # what running an evaluation needs: its kind, and its job with its judges


def shared_block_judgments(environ: Mapping[str, str]) -> int:
    """CELERY_BLOCK_JUDGMENTS: about how many judgments a block has when workers share an evaluation (default
    SHARED_BLOCK_JUDGMENTS); JobFailed when it is not a whole number > 0."""
    raw = str(environ.get("CELERY_BLOCK_JUDGMENTS") or "").strip()
    if not raw:
        return SHARED_BLOCK_JUDGMENTS
    if not raw.isdigit() or int(raw) < 1:
        raise JobFailed(_("CELERY_BLOCK_JUDGMENTS must be a whole number > 0, got %(value)s.", value=repr(raw)))
    return int(raw)


def create_evaluation(store: Store, upload_id: str, methods: list[str] | None = None,
                      judge: Mapping | None = None, environ: Mapping[str, str] = os.environ,
                      options: Mapping | None = None, judges: list | None = None,
                      started_by: str | None = None) -> dict:
    """Check a request and record a queued evaluation; raises RequestError with a readable reason.

    `options` are the upload's kind's own start fields (a mobility reference set, a conversation annotation);
    `judges`, a panel: each judge's settings, over the `judge` settings they share; `started_by`, the signed-in
    user who asked (with accounts on), which the list of evaluations filters by.
    """
    upload = store.get_upload(upload_id or "")
    if upload is None:
        raise RequestError(_("Upload '%(id)s' does not exist. Upload the file first.", id=upload_id))
    kind = registry.get(upload["kind"])
    if not isinstance(kind, Scored):
        raise RequestError(not_scored(kind))
    request = StartRequest(methods, options or {}, lambda: check_judges(judge, judges, environ), store)
    try:
        plan = kind.start(upload, request)
    except StartError as exc:
        raise RequestError(str(exc)) from exc
    evaluation = {"id": new_id(), "upload_id": upload_id, "kind": upload["kind"], "methods": plan.methods,
                  "settings": plan.settings, "total": plan.total, "started_by": started_by}
    store.add_evaluation(evaluation)
    return store.get_evaluation(evaluation["id"])  # type: ignore[return-value]  # just added


def can_resume(evaluation: dict, rerun_failed: bool) -> bool:
    """Whether a stopped evaluation can be started again: cancelled or failed, or done or incomplete when its failed
    and unparsed judgments are to be asked again (those have nothing else left)."""
    return evaluation["status"] in ("cancelled", "failed") or (
        rerun_failed and evaluation["status"] in ("done", "incomplete"))


class Evaluations:
    """The evaluations' job type: the steps of pipeline/evaluation_steps.py as the backends run them; `rescore`
    scores a finished one again (kinds' pages, after people's ratings were attached)."""

    name = "evaluation"

    def __init__(self, store: Store, uploads: str | Path | blobs.Blobs, results: str | Path | blobs.Blobs,
                 environ: Callable[[], Mapping[str, str]] = lambda: os.environ):
        self.pipeline = Pipeline(store, uploads, results, environ)
        self.store = store

    # -- its state --------------------------------------------------------------------------------------------

    def status(self, job_id: str) -> str | None:
        """The evaluation's status, None when it does not exist."""
        return (self.store.get_evaluation(job_id, with_result=False) or {}).get("status")

    def set_status(self, job_id: str, status: str, error: str | None = None) -> None:
        """Move the evaluation to a status, stamping its start and end times."""
        self.store.set_status(job_id, status, error)

    def unfinished(self) -> list[str]:
        """The queued and running evaluations, oldest first."""
        return self.store.unfinished_evaluations()

    def reopen(self, job_id: str, rerun_failed: bool) -> bool:
        """Queue a cancelled or failed evaluation again (with rerun_failed, first putting its failed and unparsed
        judgments back to pending; a finished one only then); False when it cannot be resumed."""
        evaluation = self.store.get_evaluation(job_id, with_result=False)
        if evaluation is None or not can_resume(evaluation, rerun_failed):
            return False
        if rerun_failed:
            self.pipeline.ask_again(job_id)
        self.store.set_status(job_id, "queued")
        return True

    def progress(self, job_id: str) -> dict:
        """Judgments done (those being asked again included: Pipeline.progress), failed, unparsed, answered by the
        cache, of the total (until they are planned, the total the evaluation was created with)."""
        progress = self.pipeline.progress(job_id)
        if not progress["total"]:
            progress["total"] = (self.store.get_evaluation(job_id, with_result=False) or {}).get("total") or 0
        return progress

    def retry_wait(self, job_id: str) -> float | None:
        """Seconds left of the pause before failed judgments are asked again, None when none is under way."""
        return self.pipeline.retry_wait(job_id)

    def failed(self, job_id: str, exc: BaseException) -> None:
        """Record that the evaluation stopped on an unexpected error."""
        self.store.set_status(job_id, "failed", _("The evaluation stopped on an internal error: %(error)s",
                                                  error=f"{type(exc).__name__}: {exc}"))

    # -- its steps --------------------------------------------------------------------------------------------

    def open(self, job_id: str) -> Work | None:
        """The evaluation's kind and job with its judges, or None after recording why it cannot run."""
        return self.pipeline.load(job_id)

    def plan(self, work: Work, shared: bool) -> list[Block]:
        """Plan the judgments once (a kind without a judge plans none: it is only scored), then the blocks of
        sessions with judgments pending: of about CELERY_BLOCK_JUDGMENTS judgments, the same blocks at every plan
        of the evaluation, when shared; else of about BLOCK_JUDGMENTS. Batch mode is one block: one Batch API run."""
        kind, job = work
        if job.config is None or not isinstance(kind, Judged):
            return []
        self.pipeline.plan(kind, job)
        evaluation_id, batch = job.evaluation["id"], job.evaluation["settings"].get("batch")
        if shared:
            pending = self.store.pending_by_session(evaluation_id)
            span = max(pending, default=0) + 1 if batch else self._grid(evaluation_id, pending)
            return [(block * span, block * span + span - 1) for block in sorted({idx // span for idx in pending})]
        sessions = self.store.pending_sessions(evaluation_id)
        if sessions is None:
            return []
        low, high = sessions
        if batch:
            return [(low, high)]
        total = self.store.progress(evaluation_id)["total"]
        span = max(1, BLOCK_JUDGMENTS * (high + 1) // max(1, total))
        return [(first, first + span - 1) for first in range(low, high + 1, span)]

    def _grid(self, evaluation_id: str, pending: dict[int, int]) -> int:
        """Sessions per shared block (`pending`: judgments to make per session index): chosen at the evaluation's
        first plan and kept in the store, so that the blocks of a resumed run, or of one sent again after the broker
        lost its tasks, are the same blocks (and leases) as those of the run before."""
        name = f"grid:{evaluation_id}"
        span = self.store.get_setting(name)
        if span is None:
            size = shared_block_judgments(self.pipeline.environ())
            span = max(1, round(size * len(pending) / max(1, sum(pending.values()))))
            span = max(span, math.ceil((max(pending, default=0) + 1) / MAX_BLOCKS))
            self.store.set_setting(name, span)
        return int(span)

    def run_block(self, work: Work, block: Block, should_stop: Callable[[], bool],
                  on_progress: Progress | None) -> None:
        """Judge the pending judgments of sessions block[0]..block[1]."""
        kind, job = work
        pending = self.store.pending_keys(job.evaluation["id"], *block)
        if pending and isinstance(kind, Judged):  # a kind without a judge plans no block
            self.pipeline.judge(kind, job, pending, should_stop, on_progress)

    def all_done(self, job_id: str) -> bool:
        """Whether no judgment is pending."""
        progress = self.store.progress(job_id)
        return progress["done"] >= progress["total"]

    def again(self, job_id: str) -> float | None:
        """Judgments that failed in an outage put back to pending, and the pause to make first
        (Pipeline.retry_failed); None when there are none, or JUDGE_FAILED_RETRY_S is spent."""
        if not self._needs_judge(job_id) or not self.store.progress(job_id)["failed"]:
            return None
        return self.pipeline.retry_failed(job_id)

    def keeps_partial(self, job_id: str) -> bool:
        """A cancelled evaluation with judgments is scored from those it has (a partial result)."""
        return self._needs_judge(job_id) and self.store.progress(job_id)["total"] > 0

    def _needs_judge(self, job_id: str) -> bool:
        evaluation = self.store.get_evaluation(job_id, with_result=False)
        return evaluation is not None and calls_judge(registry.get(evaluation["kind"]), evaluation)

    def result(self, work: Work) -> dict:
        """The result document, with its provenance; JobFailed when the kind cannot score it."""
        return self.pipeline.score(*work)

    def record(self, work: Work, result: dict, cancelled: bool) -> None:
        """Keep the result document with the end status: cancelled, else done or incomplete (failed judgments)."""
        evaluation_id = work[1].evaluation["id"]
        status, error = ("cancelled", None) if cancelled else self.pipeline.end_status(evaluation_id)
        self.pipeline.finish(evaluation_id, result, status=status, error=error)

    def rescore(self, evaluation_id: str) -> dict:
        """Score a finished evaluation again from what is stored and keep the new document with the same status;
        JobFailed when it cannot be."""
        return self.pipeline.rescore(evaluation_id)
