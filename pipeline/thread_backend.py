"""The thread backend (pipeline/job.py): each job runs on a background thread of this process, its blocks one after
the other; the default without a broker, and what `flask score` and `flask simulate` run in the foreground."""
from __future__ import annotations

import logging
import threading
import time
from typing import Generic

from kinds.kind import JobFailed
from pipeline.job import RUNNING, J, Progress, pause
from storage.database import database_unreachable

log = logging.getLogger(__name__)

DATABASE_WAIT_S = 2.0  # between two attempts to go on with a job while the database cannot be reached
THREAD_EXIT_S = 5.0  # how long a resume waits for the thread of a job that just ended to leave


class ThreadBackend(Generic[J]):
    """Runs the jobs of one job type on threads of this process; the database holds every bit of their state, so a
    process that starts again resumes them (`resume`)."""

    def __init__(self, job: J) -> None:
        self.job = job
        self._cancelled: set[str] = set()
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def start(self, job_id: str) -> None:
        """Run a job on a background thread (no-op when it already runs here)."""
        with self._lock:
            if self.running(job_id):
                return
            self._cancelled.discard(job_id)
            thread = threading.Thread(target=self.run, args=(job_id,), name=f"{self.job.name}-{job_id}", daemon=True)
            self._threads[job_id] = thread
            thread.start()

    def resume(self) -> list[str]:
        """Start again every job that was queued or running when the process stopped."""
        ids = self.job.unfinished()
        for job_id in ids:
            self.start(job_id)
        return ids

    def requeue(self) -> list[str]:
        """As `resume`: start every queued or running job that no thread of this process runs."""
        return self.resume()

    def running(self, job_id: str) -> bool:
        """Whether a thread of this process runs the job."""
        thread = self._threads.get(job_id)
        return bool(thread and thread.is_alive())

    def cancel(self, job_id: str) -> bool:
        """Ask a queued or running job to stop (its thread records it cancelled, with what it did so far when the job
        type keeps that); False when it is neither."""
        if self.job.status(job_id) not in RUNNING:
            return False
        self._cancelled.add(job_id)
        if not self.running(job_id):
            self.job.set_status(job_id, "cancelled")
        return True

    def resume_one(self, job_id: str, rerun_failed: bool = False) -> bool:
        """Go on with a cancelled or failed job (JobType.reopen); False when it runs or cannot be resumed."""
        thread = self._threads.get(job_id)
        if thread and thread.is_alive() and self.job.status(job_id) not in RUNNING:
            thread.join(THREAD_EXIT_S)  # it recorded its end and is leaving: a resume at once must not find it running
        if self.running(job_id) or not self.job.reopen(job_id, rerun_failed):
            return False
        self.start(job_id)
        return True

    def waiting(self, job_id: str) -> str | None:
        """"retry" during a pause before failed items are done again, "worker" when no thread of this process runs
        the job, else None."""
        if self.job.retry_wait(job_id):
            return "retry"
        return None if self.running(job_id) else "worker"

    def progress(self, job_id: str) -> dict:
        """The job type's progress, with what the job waits for."""
        return {**self.job.progress(job_id), "waiting": self.waiting(job_id)}

    def wait(self, job_id: str, timeout: float | None = None) -> None:
        """Block until the job's thread has finished."""
        thread = self._threads.get(job_id)
        if thread:
            thread.join(timeout)

    def run(self, job_id: str, on_progress: Progress | None = None) -> None:
        """Run one job to its end in this thread, recording a failure instead of raising. While the database cannot be
        reached (a restart), it tries again every DATABASE_WAIT_S and goes on from where it stood. A job queued again
        while it ran (a start that found it running here) is run again, so that no start is lost."""
        while self._run_once(job_id, on_progress):
            pass

    def _run_once(self, job_id: str, on_progress: Progress | None) -> bool:
        """One run of the job; whether it is to be run again: it ran, and was queued again meanwhile. A thread of
        this backend that ends leaves the backend's list under its lock, so a start after that check starts anew."""
        while True:
            try:
                ran = self._run(job_id, on_progress)
                break
            except Exception as exc:  # the job must end in a visible state, whatever went wrong
                if database_unreachable(exc) and job_id not in self._cancelled:
                    log.warning("%s %s: the database cannot be reached (%s); trying again in %s s", self.job.name,
                                job_id, type(exc).__name__, DATABASE_WAIT_S)
                    time.sleep(DATABASE_WAIT_S)
                    continue
                log.exception("%s %s failed", self.job.name, job_id)
                self.job.failed(job_id, exc)
                ran = False
                break
        while (again := self._again(job_id, ran)) is None:
            log.warning("%s %s: the database cannot be reached; trying again in %s s", self.job.name,
                        job_id, DATABASE_WAIT_S)
            time.sleep(DATABASE_WAIT_S)
        return again

    def _again(self, job_id: str, ran: bool) -> bool | None:
        """Whether the job is to run again (it ran, and was queued again meanwhile), its thread leaving the list when
        not; None while the database cannot be reached to say, so that a restart just as a run ends is waited out."""
        with self._lock:
            try:
                again = ran and job_id not in self._cancelled and self.job.status(job_id) == "queued"
            except Exception as exc:
                if database_unreachable(exc):
                    return None
                log.exception("%s %s: its status could not be read", self.job.name, job_id)
                again = False
            if not again and self._threads.get(job_id) is threading.current_thread():
                del self._threads[job_id]
            return again

    def _run(self, job_id: str, on_progress: Progress | None) -> bool:
        """Open, mark running, run every block (and again, after the job type's pause, while it asks to), then
        record the result: cancelled when asked to stop meanwhile. False when the job could not be opened."""
        work = self.job.open(job_id)
        if work is None:
            return False
        self.job.set_status(job_id, "running")
        stop = lambda: job_id in self._cancelled  # noqa: E731
        try:
            while True:
                for block in self.job.plan(work, shared=False):
                    if stop():
                        break
                    self.job.run_block(work, block, stop, on_progress)
                if stop() or (wait := self.job.again(job_id)) is None:
                    break
                pause(wait, stop)
            result = self.job.result(work)
        except JobFailed as exc:
            self.job.set_status(job_id, "failed", str(exc))
            return True
        self.job.record(work, result, cancelled=stop())
        return True
