"""THE INTERFACE of long work: job types and the backends that run them.

A job type (evaluations: pipeline/evaluations.py; simulations: simulate/simulations.py) says how one of its jobs is
opened, planned into blocks, run block by block and finished, over the database that holds every bit of its state.
A backend starts, cancels, resumes, requeues and reports the progress of the jobs of any job type, the same way for
all: `ThreadBackend` (pipeline/thread_backend.py) on threads of this process, `CeleryBackend`
(pipeline/celery_backend.py) on Celery workers when CELERY_BROKER_URL is set, each step a task
(pipeline/celery_tasks.py).

A job's life: queued, then running (once opened), then an end status the job type records (done, incomplete,
failed), or cancelled. Cancelling stops its blocks at their next check; resuming or requeueing plans it again, and
since the plan records the work once and each block does only what is left, nothing done is done twice.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Protocol, TypeVar

RUNNING = ("queued", "running")  # the statuses of a job that is not over
Block = tuple[int, int]  # a job's block: the first and last index of the items it covers (sessions, personas)
Progress = Callable[[dict], None]  # told the job's progress as its blocks advance

W = TypeVar("W")  # what a job type needs to run one job (opened once per run, or per task)


class JobType(Protocol[W]):
    """One kind of long work. Every method reads or writes the database only, so that any process may call it."""

    name: str  # "evaluation", "simulation": in log lines and in the names of its tasks' sweeps

    def status(self, job_id: str) -> str | None:
        """The job's status, None when it does not exist."""
        ...

    def set_status(self, job_id: str, status: str, error: str | None = None) -> None:
        """Move the job to a status (with why, for failed and incomplete)."""
        ...

    def unfinished(self) -> list[str]:
        """The ids of the jobs that are queued or running, oldest first."""
        ...

    def reopen(self, job_id: str, rerun_failed: bool) -> bool:
        """Queue a stopped job again (cancelled or failed; with rerun_failed also one that ended with failures,
        which are forgotten so they are done again); False when it is not one of those."""
        ...

    def progress(self, job_id: str) -> dict:
        """How far the job is: at least "done" and "total" (items), and "failed"."""
        ...

    def retry_wait(self, job_id: str) -> float | None:
        """Seconds left of a pause the job makes before doing failed items again, None when it makes none."""
        ...

    def failed(self, job_id: str, exc: BaseException) -> None:
        """Record that the job stopped on an unexpected error."""
        ...

    def open(self, job_id: str) -> W | None:
        """What running the job needs (its file, its endpoints' configurations), or None after recording why it
        cannot run."""
        ...

    def plan(self, work: W, shared: bool) -> list[Block]:
        """Record the job's work once, and list its blocks that have something left to do: small ones when workers
        share them (`shared`), else as large as memory allows for one thread. JobFailed when it cannot be planned."""
        ...

    def run_block(self, work: W, block: Block, should_stop: Callable[[], bool], on_progress: Progress | None) -> None:
        """Do what is left of one block, keeping each result as it comes, until it is done or should_stop()."""
        ...

    def all_done(self, job_id: str) -> bool:
        """Whether no block has anything left to do."""
        ...

    def again(self, job_id: str) -> float | None:
        """Once every block is done: put back the items that failed for a passing reason and return the pause to make
        before running the blocks again, or None when the job is to be finished now."""
        ...

    def keeps_partial(self, job_id: str) -> bool:
        """Whether a cancelled job is finished with what it did so far (a partial result), or only marked."""
        ...

    def result(self, work: W) -> Any:
        """What the job ends with (a result document), from what is stored; JobFailed when there is none."""
        ...

    def record(self, work: W, result: Any, cancelled: bool) -> None:
        """Keep the job's result with its end status (cancelled, when it was)."""
        ...


J = TypeVar("J", bound=JobType[Any])


class Backend(Protocol[J]):
    """Runs the jobs of one job type (`job`); web pages, the API and the CLI only call these."""

    job: J

    def start(self, job_id: str) -> None:
        """Start a queued job (a no-op when it already runs)."""
        ...

    def cancel(self, job_id: str) -> bool:
        """Ask a queued or running job to stop; False when it is neither."""
        ...

    def resume_one(self, job_id: str, rerun_failed: bool = False) -> bool:
        """Go on with a cancelled or failed job (JobType.reopen); False when it is running or finished."""
        ...

    def resume(self) -> list[str]:
        """What a web process does when it starts: start the unfinished jobs it runs itself; their ids."""
        ...

    def requeue(self) -> list[str]:
        """Start again every queued or running job, wherever it was lost (a process or a broker that stopped); safe
        to repeat; their ids."""
        ...

    def waiting(self, job_id: str) -> str | None:
        """What a queued or running job waits for: "retry" (a pause before failed items are done again), "worker"
        (nothing runs it now), else None."""
        ...

    def progress(self, job_id: str) -> dict:
        """The job type's progress, with "waiting"."""
        ...

    def wait(self, job_id: str, timeout: float | None = None) -> None:
        """Block until the job is no longer run (or the timeout passed)."""
        ...

    def run(self, job_id: str, on_progress: Progress | None = None) -> None:
        """Run one job to its end in the foreground of this process (the CLI), broker or not."""
        ...


def pause(seconds: float, should_stop: Callable[[], bool]) -> None:
    """Sleep `seconds`, waking early when should_stop() turns true."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not should_stop():
        time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
