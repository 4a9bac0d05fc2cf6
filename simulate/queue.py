"""Simulations on Celery workers, when CELERY_BROKER_URL is set (loaded only then; pipeline/queue_runner.py runs the
evaluations the same way).

Starting a simulation enqueues one `psb.simulate_block(simulation_id, first, last)` per block of PERSONAS_PER_BLOCK
personas: each asks the missing turns of those personas' conversations (simulate/engine.py, under a Redis lease, so
that two deliveries of one block never run at once) and, once no turn of the whole simulation is left to ask,
enqueues `psb.simulate_finish`, which writes the files, ingests them and starts their evaluations, exactly once.
Tasks are acknowledged late: a block of a worker killed with kill -9 is delivered again, and asks only the turns
not kept yet (answers the killed delivery received were cached first), so at most the calls in flight are paid
twice. Cancel is a status the blocks read while they run; resume enqueues the blocks again. Tasks the broker lost
(a Redis restarted without persistence) are found by the evaluations' sweep, which every worker runs each
CELERY_SWEEP_S seconds: a queued or running simulation with no block or finish holding a lease and no task in the
broker, two sweeps in a row, has its blocks sent again.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable

from celery import Celery, Task, signals
from celery.exceptions import Retry

from pipeline.queue_runner import (
    RUNNING,
    Lease,
    StopCheck,
    lost_work,
    stopped_from_outside,
    transient,
    visibility_timeout_of,
)
from simulate.engine import Engine
from simulate.jobs import SimulationRunner, configs_of, reopen
from simulate.plan import Plan
from translations import _

log = logging.getLogger(__name__)
PERSONAS_PER_BLOCK = 4


class SimulationQueue:
    """The app's simulation runner with a broker: the same methods as SimulationRunner (create, start, resume,
    cancel, resume_one, running, wait, run), where starting means enqueuing; `run` (the CLI) still runs in the
    foreground of this process."""

    def __init__(self, local: SimulationRunner, celery: Celery, client: Any, sweep_s: float) -> None:
        self.local = local
        self.store = local.store
        self.celery = celery
        self.redis = client
        self.queue = celery.conf.task_default_queue
        self.lease_s = max(2.0, min(60.0, visibility_timeout_of(celery) / 2))
        self.sweep_s = sweep_s

    # -- the web side ------------------------------------------------------------------------------------
    def create(self, request: Any) -> dict:
        """SimulationRunner.create."""
        return self.local.create(request)

    def start(self, simulation_id: str) -> None:
        """Enqueue a block task per PERSONAS_PER_BLOCK personas."""
        simulation = self.store.get_simulation(simulation_id)
        if simulation is None:
            return
        count = len(simulation["settings"]["personas"])
        for first in range(0, count, PERSONAS_PER_BLOCK):
            self._send("psb.simulate_block", simulation_id, first, min(count, first + PERSONAS_PER_BLOCK) - 1)

    def resume(self) -> list[str]:
        """Nothing: web processes never run simulations; workers do (see `requeue`)."""
        return []

    def requeue(self) -> list[str]:
        """Enqueue again every queued or running simulation (a worker starting after the whole deployment did)."""
        ids = self.store.unfinished_simulations()
        for simulation_id in ids:
            self.start(simulation_id)
        return ids

    def sweep(self) -> list[str]:
        """Send again the simulations whose tasks the broker lost (pipeline.queue_runner.lost_work); their ids."""
        lost = lost_work(self.redis, self.queue, "simulations", self.sweep_s, self.store.unfinished_simulations(),
                         self._leased)
        for simulation_id in lost:
            self.start(simulation_id)
        if lost:
            log.warning("sweep: sent again %d simulation(s) whose tasks were lost: %s", len(lost), ", ".join(lost))
        return lost

    def _leased(self, simulation_id: str) -> bool:
        """Whether a block or the finish of the simulation holds a lease now."""
        return any(True for _key in self.redis.scan_iter(match=f"psb:lease:simulate*:{simulation_id}*", count=1000))

    def running(self, simulation_id: str) -> bool:
        """Whether the simulation is queued or running (on some worker)."""
        simulation = self.store.get_simulation(simulation_id)
        return simulation is not None and simulation["status"] in RUNNING

    def cancel(self, simulation_id: str) -> bool:
        """Mark a queued or running simulation cancelled; its blocks stop within StopCheck's STATUS_CHECK_S."""
        with self._state(simulation_id):
            if not self.running(simulation_id):
                return False
            self.store.set_simulation_status(simulation_id, "cancelled")
        return True

    def resume_one(self, simulation_id: str, rerun_failed: bool = False) -> bool:
        """As SimulationRunner.resume_one, the blocks enqueued."""
        if not reopen(self.store, simulation_id, rerun_failed):  # a queued or running one is neither
            return False
        self.start(simulation_id)
        return True

    def wait(self, simulation_id: str, timeout: float | None = None) -> None:
        """Poll until the simulation has left queued and running (or the timeout passed)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.running(simulation_id) and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.1)

    def run(self, simulation_id: str, on_progress: Callable[[dict], None] | None = None) -> None:
        """Run one simulation in the foreground of this process (the CLI)."""
        self.local.run(simulation_id, on_progress)

    # -- the tasks -----------------------------------------------------------------------------------------
    def block(self, task: Task, simulation_id: str, first: int, last: int) -> None:
        """Ask the missing turns of personas first..last; enqueue the finish once nothing is left to ask."""
        simulation = self.store.get_simulation(simulation_id)
        if simulation is None or simulation["status"] not in RUNNING:
            return
        lease = Lease(self.redis, f"simulate:{simulation_id}:{first}:{last}", self.lease_s)
        with lease as held:
            if not held:
                raise task.retry(countdown=self.lease_s / 2, max_retries=None)
            plan = Plan.from_settings(simulation["settings"])
            try:
                configs = configs_of(plan, self.local.environ())
            except ValueError as exc:
                self.store.set_simulation_status(simulation_id, "failed", str(exc))
                return
            with self._state(simulation_id):
                if self.store.get_simulation(simulation_id)["status"] == "queued":  # type: ignore[index]
                    self.store.set_simulation_status(simulation_id, "running")
            stop = StopCheck(lease, lambda: (self.store.get_simulation(simulation_id) or {}).get("status"))
            Engine(self.store, simulation_id, plan, configs, personas=(first, last)).run(stop)
            if stop.cancelled:
                return
            if lease.lost:
                raise task.retry(countdown=self.lease_s / 2, max_retries=None)
        self._send("psb.simulate_finish", simulation_id)

    def finish(self, task: Task, simulation_id: str) -> None:
        """Once no turn is left to ask: the files, their uploads and evaluations, the end status; exactly once."""
        with Lease(self.redis, f"simulate-finish:{simulation_id}", self.lease_s) as held:
            if not held:
                raise task.retry(countdown=self.lease_s / 2, max_retries=None)
            simulation = self.store.get_simulation(simulation_id)
            if simulation is None or simulation["status"] != "running":
                return
            plan = Plan.from_settings(simulation["settings"])
            engine = Engine(self.store, simulation_id, plan, {})
            engine.load()
            if engine.ready_steps():
                return  # blocks are still asking; the last one enqueues this step again
            self.local.finish(simulation_id, simulation["settings"], plan, engine.kept)

    def _send(self, task: str, *args: Any) -> None:
        self.celery.send_task(task, args=args, queue=self.queue)

    def _state(self, simulation_id: str) -> Any:
        """The lock around a change of status that depends on the current one (cancel, queued -> running)."""
        return self.redis.lock(f"psb:simulation-state:{simulation_id}", timeout=30, blocking_timeout=30,
                               thread_local=False)


def init_celery(celery: Celery, local: SimulationRunner, evaluations: Any) -> SimulationQueue:
    """Register the simulation tasks on the app's Celery app, and their sweep with the evaluations' runner
    (pipeline.queue_runner.CeleryRunner, whose Redis client it shares); the runner that enqueues them."""
    runner = SimulationQueue(local, celery, evaluations.redis, evaluations.sweep_s)
    evaluations.sweeps.append(runner.sweep)
    celery.psb_simulations = runner

    def guarded(step: Callable[..., None]) -> Callable[..., None]:
        def body(task: Task, simulation_id: str, *args: Any) -> None:
            try:
                step(task, simulation_id, *args)
            except Retry:
                raise
            except Exception as exc:  # the simulation must end in a visible state, whatever went wrong
                stopped = stopped_from_outside(exc)
                if stopped is not None:
                    raise stopped from exc
                if transient(exc):
                    log.warning("%s of simulation %s gave up: %s", task.name, simulation_id, exc)
                    return
                log.exception("simulation %s failed", simulation_id)
                runner.store.set_simulation_status(simulation_id, "failed", _(
                    "The simulation stopped on an internal error: %(error)s", error=f"{type(exc).__name__}: {exc}"))
        body.__name__ = body.__qualname__ = step.__name__
        body.__doc__ = step.__doc__
        return body

    options = {"bind": True, "max_retries": None, "acks_late": True, "reject_on_worker_lost": True}
    celery.task(name="psb.simulate_block", **options)(guarded(runner.block))
    celery.task(name="psb.simulate_finish", **options)(guarded(runner.finish))
    return runner


@signals.worker_ready.connect
def _requeue_on_start(sender: Any = None, **_kwargs: Any) -> None:
    """A worker of ours is ready: enqueue again the simulations a restart of the whole deployment left unfinished."""
    celery = getattr(sender, "app", None)
    runner = getattr(celery, "psb_simulations", None)
    if runner is not None and getattr(celery, "psb_requeue_on_start", True):
        try:
            runner.requeue()
        except Exception:  # noqa: BLE001 - a worker that cannot requeue still works
            log.exception("requeue of simulations at worker start failed")
