"""The Celery backend (pipeline/job.py): any job type's jobs run on Celery workers with a Redis broker, when
CELERY_BROKER_URL is set (docs/team-deployment.md). Loaded only then.

Web processes only record state and send tasks; any number of workers on any number of machines run each job in three
steps, each a task (pipeline/celery_tasks.py names and registers them):

- plan(job_id): opens the job, marks it running, records its work once (JobType.plan) and sends one block task per
  block with something left to do, so one large job spreads over every worker (or the finish when none is left);
- block(job_id, first, last): does what is left of one block under a Redis lease (pipeline/leases.py), so that two
  deliveries of it never run at once, stopping when its job is cancelled or failed (a block that finds its judge dead
  fails the job, with why); the finish is sent once nothing is left;
- finish(job_id): under a lease and only while the job is still running (or cancelled with a partial result to keep),
  so exactly one run records it; when the job type puts failed items back (an outage of the judge), the plan is sent
  again after its pause instead.

Every step is idempotent and acknowledged late: a task of a worker killed with kill -9 is delivered again after
CELERY_VISIBILITY_TIMEOUT seconds and does only what is left. Tasks the broker lost (a Redis restarted without
persistence) are found by a sweep each worker runs every CELERY_SWEEP_S seconds (`sweep`).
"""
from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from typing import Any, Generic, Iterator, Mapping

import redis

from kinds.kind import JobFailed
from pipeline.job import RUNNING, J, Progress
from pipeline.leases import Lease, StopCheck, lost_work
from pipeline.thread_backend import ThreadBackend

log = logging.getLogger(__name__)

STATE_LOCK_S = 30  # the longest a change of status holds its lock, and waits for it


class Busy(Exception):
    """Another delivery of the same step holds its lease: the task is to be tried again once it may have expired."""


class CeleryBackend(Generic[J]):
    """Runs the jobs of one job type on Celery workers: the web side (start, cancel, ...), where starting means
    sending a task, and the three steps the workers' tasks run. `run` still runs one job in the foreground of this
    process (the CLI), on `local`."""

    def __init__(self, job: J, celery: Any, client: redis.Redis, tasks: Mapping[str, str], lease_s: float,
                 sweep_s: float) -> None:
        self.job = job
        self.local = ThreadBackend(job)
        self.celery = celery
        self.redis = client
        self.tasks = tasks  # step ("plan", "block", "finish") -> its task's name
        self.queue: str = celery.conf.task_default_queue
        self.lease_s = lease_s
        self.sweep_s = sweep_s

    # -- the web side -------------------------------------------------------------------------------------------

    def start(self, job_id: str) -> None:
        """Send the job's plan task."""
        if self.job.status(job_id) is not None:
            self._send("plan", job_id)

    def resume(self) -> list[str]:
        """Nothing: web processes never run jobs; workers do (see `requeue`)."""
        return []

    def requeue(self) -> list[str]:
        """Send again the plan of every queued or running job (`flask --app app jobs requeue`, the first worker of a
        deployment, the sweep). Safe to repeat: blocks at work hold their lease, and only what is left is done."""
        ids = self.job.unfinished()
        for job_id in ids:
            self.start(job_id)
        return ids

    def running(self, job_id: str) -> bool:
        """Whether the job is queued or running (on some worker)."""
        return self.job.status(job_id) in RUNNING

    def cancel(self, job_id: str) -> bool:
        """Mark a queued or running job cancelled; its running blocks stop at their next check, and a job type that
        keeps a partial result gets its finish sent. False when it is neither."""
        with self._state(job_id):
            if not self.running(job_id):
                return False
            self.job.set_status(job_id, "cancelled")
        if self.job.keeps_partial(job_id):
            self._send("finish", job_id)
        return True

    def resume_one(self, job_id: str, rerun_failed: bool = False) -> bool:
        """Go on with a cancelled or failed job (JobType.reopen); False while it is queued or running, or when it
        cannot be resumed."""
        with self._state(job_id):
            if not self.job.reopen(job_id, rerun_failed):
                return False
        self.start(job_id)
        return True

    def waiting(self, job_id: str) -> str | None:
        """"retry" during the pause before failed items are done again; "worker" when none of the job's steps holds
        a lease (every worker busy with other work, none running, or its tasks lost until the next sweep); else
        None."""
        if self.job.retry_wait(job_id):
            return "retry"
        try:
            return None if self._leased(job_id) else "worker"
        except redis.exceptions.RedisError:
            return "worker"  # no worker gets anything from a broker that cannot be reached

    def progress(self, job_id: str) -> dict:
        """The job type's progress, with what the job waits for."""
        return {**self.job.progress(job_id), "waiting": self.waiting(job_id)}

    def wait(self, job_id: str, timeout: float | None = None) -> None:
        """Poll until the job has left queued and running (or the timeout passed)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.running(job_id) and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.1)

    def run(self, job_id: str, on_progress: Progress | None = None) -> None:
        """Run one job to its end in the foreground of this process (the CLI), with no task sent. It holds a lease
        while it runs, so that the workers' sweep does not take it for work whose tasks were lost."""
        lease = self._lease(f"foreground:{job_id}")
        try:
            held = lease.acquire()
        except redis.exceptions.RedisError as exc:  # the broker is down: the run needs nothing of it
            log.warning("running %s %s without a lease: %s", self.job.name, job_id, exc)
            held = False
        try:
            self.local.run(job_id, on_progress)
        finally:
            if held:
                lease.release()

    # -- the steps, as the workers' tasks run them --------------------------------------------------------------

    def plan(self, job_id: str) -> None:
        """Open the job, mark it running, record its work once, then send a block task for every block with
        something left (the finish, when there is none)."""
        with self._lease(f"plan:{job_id}") as held:
            if not held:
                raise Busy
            if self.job.status(job_id) not in RUNNING:
                return
            work = self.job.open(job_id)
            if work is None:
                return  # why is recorded
            with self._state(job_id):
                status = self.job.status(job_id)
                if status == "queued":
                    self.job.set_status(job_id, "running")
                elif status != "running":
                    return
            try:
                blocks = self.job.plan(work, shared=True)
            except JobFailed as exc:
                self.job.set_status(job_id, "failed", str(exc))
                return
            for first, last in blocks:
                self._send("block", job_id, first, last)
            if not blocks:
                self._send("finish", job_id)

    def block(self, job_id: str, first: int, last: int) -> None:
        """Do what is left of one block; send the finish once the job has nothing left."""
        if self.job.status(job_id) not in RUNNING:
            return
        lease = self._lease(f"block:{job_id}:{first}:{last}")
        with lease as held:
            if not held:
                raise Busy
            work = self.job.open(job_id)
            if work is None:
                return
            stop = StopCheck(lease, lambda: self.job.status(job_id))
            try:
                self.job.run_block(work, (first, last), stop, None)
            except JobFailed as exc:  # a dead judge (judge/breaker.py): the job fails, resumable; other blocks stop
                with self._state(job_id):
                    if self.job.status(job_id) in RUNNING:
                        self.job.set_status(job_id, "failed", str(exc))
                return
            if stop.cancelled:
                if self.job.keeps_partial(job_id):
                    self._send("finish", job_id)  # the partial result, with this block's last results
                return
            if lease.lost:
                raise Busy  # whoever holds it now finishes; this delivery checks after
        if self.job.all_done(job_id):
            self._send("finish", job_id)

    def finish(self, job_id: str) -> None:
        """The final step, once nothing is left: the result recorded by exactly one run, while the job is as it was
        when the step began (a cancelled job resumed meanwhile is not finished by the partial result of before)."""
        with self._lease(f"finish:{job_id}") as held:
            if not held:
                raise Busy
            status = self.job.status(job_id)
            if status == "running":
                if not self.job.all_done(job_id):
                    return  # blocks are still at work; the last one sends this step again
                wait = self.job.again(job_id)
                if wait is not None:  # failed items are pending again: done after a pause
                    self._send("plan", job_id, countdown=wait)
                    return
            elif not (status == "cancelled" and self.job.keeps_partial(job_id)):
                return  # finished or failed already, or queued for a plan that has not run yet
            work = self.job.open(job_id)
            if work is None:
                return
            try:
                result = self.job.result(work)
            except JobFailed as exc:
                with self._state(job_id):
                    if self.job.status(job_id) == "running":
                        self.job.set_status(job_id, "failed", str(exc))
                return
            with self._state(job_id):
                if self.job.status(job_id) == status:
                    self.job.record(work, result, cancelled=status == "cancelled")

    def sweep(self) -> list[str]:
        """Send again the jobs whose tasks the broker lost (pipeline.leases.lost_work); their ids."""
        lost = lost_work(self.redis, self.queue, f"{self.job.name}s", self.sweep_s, self.job.unfinished(),
                         self._leased)
        for job_id in lost:
            self.start(job_id)
        if lost:
            log.warning("sweep: sent again %d %s(s) whose tasks were lost: %s", len(lost), self.job.name,
                        ", ".join(lost))
        return lost

    # -- helpers ------------------------------------------------------------------------------------------------

    def _send(self, step: str, job_id: str, *args: Any, countdown: float | None = None) -> None:
        self.celery.send_task(self.tasks[step], args=(job_id, *args), queue=self.queue, countdown=countdown)

    @contextmanager
    def _state(self, job_id: str) -> Iterator[None]:
        """The lock around a change of a job's status that depends on its current one (cancel, resume, queued ->
        running, the finish's end status): the store has no compare-and-set. LockError when it cannot be taken
        within STATE_LOCK_S."""
        lock = self.redis.lock(f"psb:state:{job_id}", timeout=STATE_LOCK_S, blocking_timeout=STATE_LOCK_S,
                               thread_local=False)
        if not lock.acquire():
            raise redis.exceptions.LockError(f"the state of {self.job.name} {job_id} is locked")
        try:
            yield
        finally:
            try:
                lock.release()
            except redis.exceptions.LockNotOwnedError:  # what it guarded took longer than the lock lives: done
                log.warning("the state lock of %s %s expired before it was released", self.job.name, job_id)

    def _lease(self, name: str) -> Lease:
        return Lease(self.redis, name, self.lease_s)

    def _leased(self, job_id: str) -> bool:
        """Whether one of the job's steps (plan, a block, finish) holds a lease now."""
        return any(True for _key in self.redis.scan_iter(match=f"psb:lease:*:{job_id}*", count=1000))
