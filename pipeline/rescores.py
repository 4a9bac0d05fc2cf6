"""Scoring a finished evaluation again, as a job type (pipeline/job.py) either backend runs: once people's ratings of
it changed (a file attached or removed, ratings given in the browser), its result document is made again from what is
stored, on a thread of this process or on the Celery workers, while the request that asked answers at once.

A rescore job's id is its evaluation's id, and its state is two settings, each written by one side only so neither
overwrites the other: `rescore:<id>` {"token", "at"}, written by each request with a new token, and `rescored:<id>`
{"status", "token", "scored", "error", "at"}, written by the job. The job scores for the token it read before it
began and keeps the document only if no other request came meanwhile (else it scores again), so the result kept last
always reads the ratings of the last request. Its status follows from the two: "running" while a run is at work,
else the status the job recorded for the latest token (done, failed, cancelled), else "queued" (asked, not started).

`Rescoring` is what kinds' pages use (kinds/host.py: `rescores()`): `later` asks for a job on the backend and answers
at once, `now` runs one in the foreground and gives the new document (the CLI, a reviewed judgment).
"""
from __future__ import annotations

import uuid
from typing import Any, Callable

from kinds.kind import JobFailed
from pipeline.evaluation_steps import FINISHED
from pipeline.evaluations import Evaluations
from pipeline.job import RUNNING, Backend, Block, Progress
from storage.database import now
from translations import _

ASKED, OWN = "rescore", "rescored"  # the settings' names, before ":<evaluation id>"


class Rescores:
    """The rescore jobs' type: one block, scoring the evaluation again and keeping the document while it is the
    latest asked for."""

    name = "rescore"

    def __init__(self, evaluations: Evaluations):
        self.pipeline = evaluations.pipeline
        self.store = evaluations.store

    # -- asking, and what is known ----------------------------------------------------------------------------

    def request(self, evaluation_id: str) -> None:
        """Ask for the evaluation to be scored again (a new token): its job is queued, or goes round once more when
        it runs. JobFailed when the evaluation does not exist or has not finished."""
        evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
        if evaluation is None or evaluation["status"] not in FINISHED:
            raise JobFailed(_("Only a finished evaluation can be scored again."))
        self.store.set_setting(f"{ASKED}:{evaluation_id}", {"token": uuid.uuid4().hex, "at": now()})

    def state(self, evaluation_id: str) -> dict | None:
        """The last request's state, None when none was made: status (queued, running, done, failed, cancelled),
        error (why it failed), requested_at, finished_at (when it ended; None until then)."""
        asked = self._asked(evaluation_id)
        if asked is None:
            return None
        own = self._own(evaluation_id)
        status = self._status(asked, own)
        return {"status": status, "error": own.get("error") if status == "failed" else None,
                "requested_at": asked["at"], "finished_at": own.get("at") if status not in RUNNING else None}

    def _asked(self, job_id: str) -> dict | None:
        return self.store.get_setting(f"{ASKED}:{job_id}")

    def _own(self, job_id: str) -> dict:
        return self.store.get_setting(f"{OWN}:{job_id}") or {}

    def _write(self, job_id: str, own: dict) -> None:
        self.store.set_setting(f"{OWN}:{job_id}", {**own, "at": now()})

    @staticmethod
    def _status(asked: dict, own: dict) -> str:
        if own.get("status") == "running":
            return "running"
        return own["status"] if own.get("token") == asked["token"] else "queued"

    # -- the job type (pipeline/job.py) -----------------------------------------------------------------------

    def status(self, job_id: str) -> str | None:
        """The job's status (see the module's docstring), None when it was never asked for."""
        asked = self._asked(job_id)
        return None if asked is None else self._status(asked, self._own(job_id))

    def set_status(self, job_id: str, status: str, error: str | None = None) -> None:
        """Running keeps what was scored; failed and cancelled are about the latest request; queued asks again."""
        if status == "queued":
            self.request(job_id)
            return
        own, asked = self._own(job_id), self._asked(job_id) or {}
        token = own.get("token") if status == "running" else asked.get("token")
        self._write(job_id, {**own, "status": status, "token": token, "error": error})

    def unfinished(self) -> list[str]:
        """The evaluations whose rescore is queued or running, longest asked first."""
        asked = self.store.settings_starting(f"{ASKED}:")
        ids = sorted((value["at"], name.split(":", 1)[1]) for name, value in asked.items())
        return [job_id for _at, job_id in ids if self.status(job_id) in RUNNING]

    def reopen(self, job_id: str, rerun_failed: bool) -> bool:
        """Ask again for a rescore that failed or was cancelled; False for any other, or when the evaluation can no
        longer be scored again."""
        if self.status(job_id) not in ("failed", "cancelled"):
            return False
        try:
            self.request(job_id)
        except JobFailed:
            return False
        return True

    def progress(self, job_id: str) -> dict:
        """One item, the document: done once kept for the latest request, failed when that failed."""
        status = self.status(job_id)
        return {"done": int(status == "done"), "total": 1, "failed": int(status == "failed")}

    def retry_wait(self, job_id: str) -> float | None:
        """None: a rescore makes no pause."""
        return None

    def failed(self, job_id: str, exc: BaseException) -> None:
        """Record why the rescore stopped: JobFailed's own message, else the internal error."""
        self.set_status(job_id, "failed", str(exc) if isinstance(exc, JobFailed) else _(
            "Scoring again stopped on an internal error: %(error)s", error=f"{type(exc).__name__}: {exc}"))

    def open(self, job_id: str) -> str | None:
        """The evaluation's id, None when no rescore of it was asked for (it was deleted since)."""
        return job_id if self._asked(job_id) is not None else None

    def plan(self, work: str, shared: bool) -> list[Block]:
        """One block while the latest request's document is not kept yet, else none."""
        return [] if self.all_done(work) else [(0, 0)]

    def run_block(self, work: str, block: Block, should_stop: Callable[[], bool], on_progress: Progress | None) -> None:
        """Score the evaluation again and keep the document, unless another request came meanwhile (the next round
        scores for that one) or the evaluation started running again (its own end scores it); JobFailed when it
        cannot be scored."""
        asked = self._asked(work)
        if asked is None or should_stop():
            return
        document, evaluation = self.pipeline.rescored(work)
        if (self._asked(work) or {}).get("token") != asked["token"]:
            return
        now_status = (self.store.get_evaluation(work, with_result=False) or {}).get("status")
        if now_status != evaluation["status"]:
            raise JobFailed(_("Only a finished evaluation can be scored again."))
        self.pipeline.finish(work, document, status=evaluation["status"], error=evaluation["error"])
        self._write(work, {**self._own(work), "scored": asked["token"]})

    def all_done(self, job_id: str) -> bool:
        """Whether the document kept was made for the latest request."""
        asked = self._asked(job_id)
        return asked is None or self._own(job_id).get("scored") == asked["token"]

    def again(self, job_id: str) -> float | None:
        """No pause: once more at once while a request came after the document kept, else None."""
        return None if self.all_done(job_id) else 0.0

    def keeps_partial(self, job_id: str) -> bool:
        """False: a cancelled rescore keeps nothing (the last document kept stays)."""
        return False

    def result(self, work: str) -> str | None:
        """The token whose document was kept."""
        return self._own(work).get("scored")

    def record(self, work: str, result: Any, cancelled: bool) -> None:
        """Done for the token scored (queued again when a request came after it), or cancelled."""
        own = self._own(work)
        if cancelled:
            self._write(work, {**own, "status": "cancelled", "token": (self._asked(work) or {}).get("token"),
                               "error": None})
        else:
            self._write(work, {**own, "status": "done", "token": result, "error": None})


class Rescoring:
    """Scoring evaluations again on a backend, for kinds' pages (kinds/host.py's `Rescores`)."""

    def __init__(self, backend: Backend[Rescores]):
        self.backend = backend
        self.job = backend.job

    def later(self, evaluation_id: str) -> dict:
        """Ask for the evaluation to be scored again by the backend (a job), answering at once with its state;
        JobFailed when it has not finished."""
        self.job.request(evaluation_id)
        self.backend.start(evaluation_id)
        return self.job.state(evaluation_id) or {}

    def now(self, evaluation_id: str) -> dict:
        """Score the evaluation again in the foreground (the job, run here) and give the document kept; JobFailed
        when it cannot be."""
        self.job.request(evaluation_id)
        self.backend.run(evaluation_id)
        state = self.job.state(evaluation_id) or {}
        if state.get("status") == "failed":
            raise JobFailed(state["error"])
        evaluation = self.job.store.get_evaluation(evaluation_id)
        if evaluation is None or evaluation["result"] is None:
            raise JobFailed(_("Only a finished evaluation can be scored again."))
        return evaluation["result"]

    def state(self, evaluation_id: str) -> dict | None:
        """The last rescore's state (Rescores.state)."""
        return self.job.state(evaluation_id)
