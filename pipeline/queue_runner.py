"""Evaluations on Celery workers with a Redis broker, when CELERY_BROKER_URL is set (docs/team-deployment.md).

Without a broker nothing here is imported: `jobs.Runner` runs evaluations on threads of the server, as always.

With one, web processes only record state in the store and enqueue; any number of workers on any number of
machines (`celery -A app:celery_app worker`, reaching the same database, uploads folder and broker) run the steps
of `jobs.Pipeline` as tasks:

- `psb.plan(evaluation_id)`: records the pending judgments once (kind.plan), then enqueues one `psb.judge_block`
  per block of session indexes (about BLOCK_JUDGMENTS judgments each), so one large evaluation spreads over
  every worker;
- `psb.judge_block(evaluation_id, first_idx, last_idx)`: judges the keys of sessions first..last that are still
  pending, with the same Judge, cache, batching and progress saving as the thread Runner, under a Redis lease (SET NX
  with expiry, renewed while it works) so that two deliveries of one block never judge at once;
- `psb.score(evaluation_id)`: the final step, once no judgment is pending (kind.score, results/<id>.json,
  set_result), run under a lease and only while the evaluation is running, so exactly one run records the result.
  Judgments that failed for a reason worth retrying (an outage of the judge) are first put back to pending and
  `psb.plan` is sent again after a pause, as the thread runner does (jobs.Pipeline.retry_failed).
  Kinds without a judge (mobility, agentbench) run only this step, as one task.

Every task is idempotent and acknowledged late: a task of a worker killed with kill -9 is delivered again after
CELERY_VISIBILITY_TIMEOUT seconds, judges only what is still pending, and answers the previous delivery received
were cached before they were recorded, so they are not paid for twice. Tasks the broker lost (a Redis restarted
without persistence) are found by a sweep each worker runs every CELERY_SWEEP_S seconds: an evaluation that is
queued or running, whose blocks hold no lease and of which no task waits in the broker, two sweeps in a row, is
sent again (`requeue`, which is safe to repeat). A broker or database outage in a task never fails an evaluation:
the task gives up and the sweep takes the evaluation up again.
"""
from __future__ import annotations

import json
import logging
import math
import os
import socket
import threading
import time
from datetime import datetime
from typing import Any, Callable, Iterable, Mapping

import kombu.exceptions
import redis
from celery import Celery, Task, signals
from celery.exceptions import Retry
from celery.utils.nodenames import default_nodename, host_format
from flask import Flask
from kombu.transport import redis as kombu_redis

from kinds import registry
from kinds.kind import JobFailed, calls_judge
from pipeline.jobs import Pipeline, Runner, can_resume
from storage.database import database_unreachable
from translations import _

log = logging.getLogger(__name__)

BLOCK_JUDGMENTS = 200  # judgments per block task, about
MAX_BLOCKS = 2000  # blocks per evaluation at most (each block reads the upload's file once)
DEFAULT_QUEUE = "personasteer"
DEFAULT_VISIBILITY_TIMEOUT = 3600
STATUS_CHECK_S = 0.5  # how often a running block reads whether its evaluation was cancelled
ALIVE_S = 30  # workers keep a key alive this long (renewed every ALIVE_S / 3): "a deployment is running"
RUNNING = ("queued", "running")
DEFAULT_SWEEP_S = 20.0  # CELERY_SWEEP_S: between two sweeps for evaluations whose tasks were lost


def sweep_interval(config: Mapping[str, Any]) -> float:
    """CELERY_SWEEP_S: seconds between two sweeps for work whose tasks the broker lost (a number > 0)."""
    return _seconds(config, "CELERY_SWEEP_S", DEFAULT_SWEEP_S)


def transient(exc: BaseException) -> bool:
    """An error of the broker or the database being out of reach for now (a restart): a task that meets it gives
    up without failing its evaluation, which the sweep takes up again."""
    return isinstance(exc, (redis.exceptions.RedisError, kombu.exceptions.OperationalError)) or \
        database_unreachable(exc)


def stopped_from_outside(exc: BaseException) -> BaseException | None:
    """The SystemExit or KeyboardInterrupt behind an error, if any: a task its worker terminated (Celery ends a
    late-acknowledged task whose broker connection was lost) can surface as another error raised while it unwound
    (an event loop stopped mid-call, say); that is no failure of the evaluation, whose task is delivered again."""
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        if isinstance(found, (SystemExit, KeyboardInterrupt)):
            return found
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return None


def _setting(config: Mapping[str, Any], name: str, default: Any) -> Any:
    value = config.get(name)
    if value in (None, ""):
        value = os.environ.get(name, "").strip() or default
    return value


def _seconds(config: Mapping[str, Any], name: str, default: float) -> float:
    """A setting that is a number of seconds > 0; ValueError naming it otherwise."""
    raw = _setting(config, name, default)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a number of seconds > 0, got {raw!r}")
    return value


def visibility_timeout(config: Mapping[str, Any]) -> float:
    """Seconds after which the broker hands a task that was not acknowledged (its worker died) to another worker."""
    return _seconds(config, "CELERY_VISIBILITY_TIMEOUT", DEFAULT_VISIBILITY_TIMEOUT)


def celery_config(config: Mapping[str, Any], broker_url: str) -> dict:
    """The Celery settings of the deployment (app.config["CELERY"])."""
    timeout = visibility_timeout(config)
    return {
        "broker_url": broker_url,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {
            "visibility_timeout": timeout,
            # look for tasks of dead workers about 10 times per visibility timeout (at most every minute)
            "unacked_restore_interval": max(1, min(60, int(timeout // 10))),
            "unacked_restore_throttle": 1,
        },
        "task_default_queue": str(_setting(config, "CELERY_QUEUE", DEFAULT_QUEUE)),
        "task_ignore_result": True,  # the store holds every result; no result backend
        "task_acks_late": True,  # acknowledged when done: a killed worker's task is delivered again
        "task_reject_on_worker_lost": True,  # a child process that died puts its task back
        "task_acks_on_failure_or_timeout": True,  # a task that raised has recorded why in the store
        "worker_prefetch_multiplier": 1,  # a worker holds no more tasks than it runs
        "worker_cancel_long_running_tasks_on_connection_loss": True,  # redelivered anyway (acks_late)
        "broker_transport": RedisTransport,
    }


class _RedisChannel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict:
        # kombu 5.7: after a lost connection the worker collects its transport (client = None), then closes the
        # channel, whose close restores unacknowledged messages through a new client: AttributeError, which ends
        # the worker ("Unrecoverable error"). A connection error instead is ignored there, and the worker
        # reconnects; the sweep takes up what was running.
        if self.connection.client is None:
            raise redis.exceptions.ConnectionError("the connection to the broker was closed")
        return super()._connparams(asynchronous)


class RedisTransport(kombu_redis.Transport):
    """kombu's Redis transport, whose channels survive the loss of the broker (see _RedisChannel)."""

    Channel = _RedisChannel


class Lease:
    """A Redis lease on a name: SET NX with an expiry, renewed on a thread while held. `lost` turns true when it
    could not be renewed (someone else may hold it now), so that the holder stops."""

    def __init__(self, client: redis.Redis, name: str, ttl: float):
        self.ttl = ttl
        self.lost = False
        self._lock = client.lock(f"psb:lease:{name}", timeout=ttl, thread_local=False)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> bool:
        """Take the lease if nobody holds it; False when someone does."""
        if not self._lock.acquire(blocking=False):
            return False
        self._thread = threading.Thread(target=self._renew, name="lease", daemon=True)
        self._thread.start()
        return True

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                self._lock.reacquire()
            except (redis.exceptions.LockError, redis.exceptions.RedisError):
                log.warning("lease %s lost", self._lock.name)
                self.lost = True
                return

    def release(self) -> None:
        """Stop renewing and give the lease back (when it is still ours)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            self._lock.release()
        except (redis.exceptions.LockError, redis.exceptions.RedisError):
            pass

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc_info: object) -> None:
        if self._thread is not None:
            self.release()


class StopCheck:
    """should_stop() of a block: its lease was lost, or `status()` (its evaluation's or simulation's, None when it
    is gone, read at most every STATUS_CHECK_S) left queued/running; `cancelled` says it was the latter."""

    def __init__(self, lease: Lease, status: Callable[[], str | None]):
        self.lease, self.status = lease, status
        self.cancelled = False
        self._next = 0.0

    def __call__(self) -> bool:
        if self.lease.lost:
            return True
        now = time.monotonic()
        if not self.cancelled and now >= self._next:
            self._next = now + STATUS_CHECK_S
            self.cancelled = self.status() not in RUNNING
        return self.cancelled


class CeleryRunner:
    """The app's runner when a broker is configured: the same methods as jobs.Runner (start, resume, cancel,
    resume_one, wait, run), where starting means enqueuing. `run` (used by `flask score`) still runs one
    evaluation in the foreground of this process."""

    def __init__(self, local: Runner, celery: Celery, client: redis.Redis):
        self.local = local  # the in-process runner of `flask score`
        self.pipeline: Pipeline = local  # its steps, which the tasks run
        self.store = local.store
        self.celery = celery
        self.redis = client
        self.queue = celery.conf.task_default_queue
        self.lease_s = max(2.0, min(60.0, visibility_timeout_of(celery) / 2))
        self.sweep_s = DEFAULT_SWEEP_S  # CELERY_SWEEP_S, set by init_app
        self.sweeps: list[Callable[[], list[str]]] = []  # other work's sweeps (simulations), run with this one

    # -- the web side: the same methods as jobs.Runner ------------------------------------------------------

    def start(self, evaluation_id: str) -> None:
        """Enqueue an evaluation: its plan task (kinds with a judge), else its one score task."""
        evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
        if evaluation is None:
            return
        needs_judge = calls_judge(registry.get(evaluation["kind"]), evaluation)
        self._send("psb.plan" if needs_judge else "psb.score", evaluation_id)

    def resume(self) -> list[str]:
        """Nothing: web processes never run nor resume evaluations; workers do (see `requeue`)."""
        return []

    def requeue(self) -> list[str]:
        """Enqueue again every evaluation that is queued or running, after a restart of the whole deployment
        (`flask --app app jobs requeue`, or the first worker to start). Safe to repeat: blocks already being
        judged hold their lease, and only pending judgments are ever asked."""
        ids = self.store.unfinished_evaluations()
        for evaluation_id in ids:
            self.start(evaluation_id)
        return ids

    def cancel(self, evaluation_id: str) -> bool:
        """Mark a queued or running evaluation cancelled; its running blocks stop at their next check (what was
        judged is kept, and scored as a partial result). False when it is not running."""
        with self._state(evaluation_id):
            evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
            if evaluation is None or evaluation["status"] not in RUNNING:
                return False
            self.store.set_status(evaluation_id, "cancelled")
        if self.store.progress(evaluation_id)["total"]:
            self._send("psb.score", evaluation_id)  # the partial result, as the thread runner keeps one
        return True

    def resume_one(self, evaluation_id: str, rerun_failed: bool = False) -> bool:
        """Continue a cancelled or failed evaluation (first putting failed and unparsed judgments back in the queue
        when asked; a finished one only then); False while it is queued or running, or finished."""
        with self._state(evaluation_id):
            evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
            if evaluation is None or evaluation["status"] in RUNNING or not can_resume(evaluation, rerun_failed):
                return False
            if rerun_failed:
                self.store.reset_judgments(evaluation_id)
            self.store.set_status(evaluation_id, "queued")
        self.start(evaluation_id)
        return True

    def wait(self, evaluation_id: str, timeout: float | None = None) -> None:
        """Block until the evaluation is no longer queued or running (or the timeout passes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while deadline is None or time.monotonic() < deadline:
            evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
            if evaluation is None or evaluation["status"] not in RUNNING:
                return
            time.sleep(0.2)

    def run(self, evaluation_id: str, on_progress: Callable[[dict], None] | None = None) -> None:
        """Run one evaluation to its end in the foreground of this process (the CLI's `flask score`)."""
        self.local.run(evaluation_id, on_progress)

    def waiting(self, evaluation_id: str) -> str | None:
        """What a queued or running evaluation waits for, if anything: "retry" (the pause before failed judgments
        are asked again), "worker" (none of its steps holds a lease: every worker busy with other work, none
        running, or its tasks lost until the next sweep), else None."""
        if self.pipeline.retry_wait(evaluation_id):
            return "retry"
        try:
            return None if self._leased(evaluation_id) else "worker"
        except redis.exceptions.RedisError:
            return "worker"  # no worker gets anything from a broker that cannot be reached

    # -- helpers ----------------------------------------------------------------------------------------

    def _send(self, task: str, *args: Any, countdown: float | None = None) -> None:
        self.celery.send_task(task, args=args, queue=self.queue, countdown=countdown)

    def _state(self, evaluation_id: str) -> Any:
        """The lock around a change of an evaluation's status that depends on its current one (cancel, resume,
        plan's queued -> running, score's final status): the store has no compare-and-set."""
        return self.redis.lock(f"psb:state:{evaluation_id}", timeout=30, blocking_timeout=30, thread_local=False)

    def _lease(self, name: str) -> Lease:
        return Lease(self.redis, name, self.lease_s)

    def _retry_later(self, task: Task) -> Exception:
        """The Retry to raise when a lease is held by another delivery: try again once it may have expired."""
        return task.retry(countdown=self.lease_s / 2, max_retries=None)

    def _fail(self, evaluation_id: str, exc: BaseException) -> None:
        log.exception("evaluation %s failed", evaluation_id)
        self.store.set_status(evaluation_id, "failed", _("The evaluation stopped on an internal error: "
                                                         "%(error)s", error=f"{type(exc).__name__}: {exc}"))

    def _grid(self, evaluation_id: str, pending: dict[int, int]) -> int:
        """Sessions per block of an evaluation (`pending`: judgments to make per session index): chosen at its
        first plan and kept in the store (plan runs under a lease), so that the blocks of a resumed run, or of one
        sent again after the broker lost its tasks, are the same blocks (and leases) as those of the run before."""
        name = f"grid:{evaluation_id}"
        span = self.store.get_setting(name)
        if span is None:
            span = max(1, round(BLOCK_JUDGMENTS * len(pending) / max(1, sum(pending.values()))))
            span = max(span, math.ceil((max(pending, default=0) + 1) / MAX_BLOCKS))
            self.store.set_setting(name, span)
        return int(span)

    def _leased(self, evaluation_id: str) -> bool:
        """Whether one of the evaluation's steps (plan, a block, score) holds a lease now."""
        return any(True for _key in self.redis.scan_iter(match=f"psb:lease:*:{evaluation_id}*", count=1000))

    # -- the tasks --------------------------------------------------------------------------------------

    def plan(self, task: Task, evaluation_id: str) -> None:
        """Record the pending judgments once, then enqueue a block task for every block with pending keys."""
        with self._lease(f"plan:{evaluation_id}") as held:
            if not held:
                raise self._retry_later(task)
            evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
            if evaluation is None or evaluation["status"] not in RUNNING:
                return
            if not calls_judge(registry.get(evaluation["kind"]), evaluation):
                self._send("psb.score", evaluation_id)
                return
            loaded = self.pipeline.load(evaluation_id)
            if loaded is None:
                return  # why is recorded
            kind, job = loaded
            with self._state(evaluation_id):
                status = self.store.get_evaluation(evaluation_id, with_result=False)["status"]
                if status == "queued":
                    self.store.set_status(evaluation_id, "running")
                elif status != "running":
                    return
            try:
                self.pipeline.plan(kind, job)
            except JobFailed as exc:
                self.store.set_status(evaluation_id, "failed", str(exc))
                return
            pending = self.store.pending_by_session(evaluation_id)
            if evaluation["settings"].get("batch"):  # one Batch API run for the whole evaluation, polled by one task
                span = max(pending, default=0) + 1
            else:
                span = self._grid(evaluation_id, pending)
            blocks = sorted({idx // span for idx in pending})
            for block in blocks:
                self._send("psb.judge_block", evaluation_id, block * span, block * span + span - 1)
            if not blocks:
                self._send("psb.score", evaluation_id)

    def judge_block(self, task: Task, evaluation_id: str, first_idx: int, last_idx: int) -> None:
        """Judge the pending keys of sessions first_idx..last_idx; enqueue the score step when none is left."""
        evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
        if evaluation is None or evaluation["status"] not in RUNNING:
            return
        lease = self._lease(f"block:{evaluation_id}:{first_idx}:{last_idx}")
        with lease as held:
            if not held:
                raise self._retry_later(task)
            pending = self.store.pending_keys(evaluation_id, first_idx, last_idx)
            if pending:
                loaded = self.pipeline.load(evaluation_id)
                if loaded is None:
                    return
                kind, job = loaded
                stop = StopCheck(lease, lambda: (self.store.get_evaluation(evaluation_id, with_result=False)
                                                 or {}).get("status"))
                self.pipeline.judge(kind, job, pending, stop)
                if stop.cancelled:
                    self._send("psb.score", evaluation_id)  # the partial result, with this block's last verdicts
                    return
                if lease.lost:
                    raise self._retry_later(task)  # whoever holds it now finishes; this delivery checks after
        progress = self.store.progress(evaluation_id)
        if progress["total"] and progress["done"] >= progress["total"]:
            self._send("psb.score", evaluation_id)

    def score(self, task: Task, evaluation_id: str) -> None:
        """The final step: the result document, once no judgment is pending, recorded by exactly one run.

        A cancelled evaluation gets its partial result (its status stays cancelled); a kind without a judge runs
        only this step."""
        with self._lease(f"score:{evaluation_id}") as held:
            if not held:
                raise self._retry_later(task)
            evaluation = self.store.get_evaluation(evaluation_id, with_result=False)
            if evaluation is None:
                return
            status = evaluation["status"]
            needs_judge = calls_judge(registry.get(evaluation["kind"]), evaluation)
            progress = self.store.progress(evaluation_id)
            if status == "queued" and not needs_judge:
                with self._state(evaluation_id):
                    if self.store.get_evaluation(evaluation_id, with_result=False)["status"] != "queued":
                        return
                    self.store.set_status(evaluation_id, "running")
            elif status == "running":
                if needs_judge and progress["done"] < progress["total"]:
                    return  # blocks are still judging; the last one enqueues this step again
                if needs_judge and progress["failed"]:
                    pause = self.pipeline.retry_failed(evaluation_id)
                    if pause is not None:  # those that failed in an outage are pending again: judged after a pause
                        self._send("psb.plan", evaluation_id, countdown=pause)
                        return
            elif not (status == "cancelled" and needs_judge and progress["total"]):
                return  # done or failed already, or queued for a plan that has not run yet
            loaded = self.pipeline.load(evaluation_id)
            if loaded is None:
                return
            kind, job = loaded
            try:
                document = self.pipeline.score(kind, job)
            except JobFailed as exc:
                with self._state(evaluation_id):
                    if self.store.get_evaluation(evaluation_id, with_result=False)["status"] == "running":
                        self.store.set_status(evaluation_id, "failed", str(exc))
                return
            with self._state(evaluation_id):
                now = self.store.get_evaluation(evaluation_id, with_result=False)["status"]
                # Still as it was when this step began: a cancelled evaluation resumed meanwhile (queued, or already
                # running again) must not be finished by the partial result of before.
                if now == status or (status == "queued" and now == "running"):
                    end, error = self.pipeline.end_status(evaluation_id) if now == "running" else (now, None)
                    self.pipeline.finish(evaluation_id, document, status=end, error=error)

    # -- workers ----------------------------------------------------------------------------------------

    def worker_ready(self, requeue: bool) -> None:
        """At a worker's start: the first worker of a deployment (no worker kept the "alive" key in the last
        ALIVE_S seconds) enqueues the unfinished evaluations again; every worker keeps the key alive."""
        key = f"psb:{self.queue}:workers-alive"
        first = self.redis.set(key, os.getpid(), nx=True, ex=ALIVE_S)
        if first and requeue:
            ids = self.requeue()
            if ids:
                log.warning("requeued %d unfinished evaluation(s): %s", len(ids), ", ".join(ids))

        def keep_alive() -> None:
            while True:
                time.sleep(ALIVE_S / 3)
                try:
                    self.redis.set(key, os.getpid(), ex=ALIVE_S)
                except redis.exceptions.RedisError:
                    pass

        threading.Thread(target=keep_alive, name="workers-alive", daemon=True).start()
        threading.Thread(target=self._sweep_forever, name="sweep", daemon=True).start()

    def _sweep_forever(self) -> None:
        while True:
            time.sleep(self.sweep_s)
            for sweep in (self.sweep, *self.sweeps):
                try:
                    sweep()
                except Exception:  # noqa: BLE001 - the broker or the database may be down: the next sweep retries
                    log.warning("sweep failed", exc_info=True)

    def sweep(self) -> list[str]:
        """Send again the evaluations whose tasks were lost (see `lost_work`); the ids sent again."""
        lost = lost_work(self.redis, self.queue, "evaluations", self.sweep_s, self.store.unfinished_evaluations(),
                         self._leased)
        for evaluation_id in lost:
            self.start(evaluation_id)
        if lost:
            log.warning("sweep: sent again %d evaluation(s) whose tasks were lost: %s", len(lost), ", ".join(lost))
        return lost


def lost_work(client: redis.Redis, queue: str, what: str, sweep_s: float, unfinished: Iterable[str],
              leased: Callable[[str], bool]) -> list[str]:
    """The ids among `unfinished` (evaluations or simulations, `what`) whose tasks the broker lost: no step holding
    a lease and no task of theirs in the broker, at this sweep and the one before (a task between the queue and its
    lease is not taken for lost). One worker of the deployment sweeps each `what` per `sweep_s`; [] for the others."""
    if not client.set(f"psb:{queue}:sweep:{what}", os.getpid(), nx=True, px=int(sweep_s * 900)):
        return []  # another worker swept a moment ago
    suspects = f"psb:{queue}:orphans:{what}"
    before = {oid.decode() for oid in client.smembers(suspects)}
    held = in_broker(client, queue)
    orphans = [oid for oid in unfinished if oid.encode() not in held and not leased(oid)]
    pipe = client.pipeline()
    pipe.delete(suspects)
    if orphans:
        pipe.sadd(suspects, *orphans)
        pipe.expire(suspects, math.ceil(3 * sweep_s))
    pipe.execute()
    return [oid for oid in orphans if oid in before]


def in_broker(client: redis.Redis, queue: str) -> bytes:
    """The messages of a queue that stand for work to come, as one text to search: waiting in the queue, or
    delivered and held for a later time (an eta ahead: a pause before a retry). A delivered message without one
    is running, and its step then holds a lease, or its worker died (kill -9, a lost connection) and it would come
    back only after CELERY_VISIBILITY_TIMEOUT, which the sweep does not wait for."""
    waiting = client.lrange(queue, 0, -1)
    now = time.time()
    return b"\n".join(waiting + [raw for raw in client.hvals("unacked") if _eta(raw) > now])


def _eta(raw: bytes) -> float:
    """The time (seconds since the epoch) a message in kombu's `unacked` hash is held for; 0 when none."""
    try:
        eta = json.loads(raw)[0]["headers"].get("eta")
        return datetime.fromisoformat(eta).timestamp() if eta else 0.0
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return 0.0


def visibility_timeout_of(celery: Celery) -> float:
    """The visibility timeout a Celery app was configured with."""
    return float((celery.conf.broker_transport_options or {}).get("visibility_timeout", DEFAULT_VISIBILITY_TIMEOUT))


def init_app(app: Flask, broker_url: str, local: Runner) -> CeleryRunner:
    """The Celery app of a Flask app (Flask's "Background Tasks with Celery": `app.extensions["celery"]`, tasks run
    in the app's context) with the evaluation tasks, and the runner that enqueues them; `local` is the app's
    thread runner, whose steps the tasks run and which still runs `flask score` in the foreground."""

    class FlaskTask(Task):
        def __call__(self, *args: object, **kwargs: object) -> object:
            with app.app_context():
                return self.run(*args, **kwargs)

    app.config["CELERY"] = {**celery_config(app.config, broker_url), **app.config.get("CELERY", {})}
    celery = Celery(app.name, task_cls=FlaskTask)
    celery.config_from_object(app.config["CELERY"])
    celery.set_default()
    celery.Worker = _unique_node_names(celery.Worker)
    runner = CeleryRunner(local, celery, redis.Redis.from_url(app.config["CELERY"]["broker_url"]))
    celery.psb_runner = runner  # for the worker_ready signal
    runner.sweep_s = sweep_interval(app.config)
    celery.psb_requeue_on_start = str(_setting(app.config, "CELERY_REQUEUE_ON_START", "1")).lower() not in (
        "0", "false", "no", "off")

    def guarded(step: Callable[..., None]) -> Callable[..., None]:
        def body(task: Task, evaluation_id: str, *args: Any) -> None:
            try:
                step(task, evaluation_id, *args)
            except Retry:
                raise
            except Exception as exc:  # the evaluation must end in a visible state, whatever went wrong
                stopped = stopped_from_outside(exc)
                if stopped is not None:  # its worker ended it (a lost broker): not the evaluation's failure
                    log.warning("%s of evaluation %s was stopped by its worker", task.name, evaluation_id)
                    raise stopped from exc
                if transient(exc):  # the broker or the database is restarting: the sweep takes it up again
                    log.warning("%s of evaluation %s gave up: %s: %s", task.name, evaluation_id,
                                type(exc).__name__, exc)
                    return
                runner._fail(evaluation_id, exc)
        body.__name__ = body.__qualname__ = step.__name__
        body.__doc__ = step.__doc__
        return body

    options = {"bind": True, "max_retries": None, "acks_late": True, "reject_on_worker_lost": True}
    celery.task(name="psb.plan", **options)(guarded(runner.plan))
    celery.task(name="psb.judge_block", **options)(guarded(runner.judge_block))
    celery.task(name="psb.score", **options)(guarded(runner.score))
    app.extensions["celery"] = celery
    return runner

def _unique_node_names(worker: type) -> type:
    """The worker class, with `worker<pid>@<host>` as its default node name instead of Celery's `celery@<host>`, so
    that two workers started with the same command on one machine do not collide; another `-n NAME@%h` still wins."""
    celery_default = host_format(default_nodename(None))  # what the command line passes when -n is not given

    class Worker(worker):
        def __init__(self, hostname: str | None = None, **kwargs: Any):
            if hostname in (None, "", celery_default):
                hostname = f"worker{os.getpid()}@{socket.gethostname()}"
            super().__init__(hostname=hostname, **kwargs)

    return Worker


@signals.worker_process_init.connect
def _on_worker_process_init(**_kwargs: Any) -> None:
    """A child of the prefork pool (the worker's default) starts: the database connections it inherited belong to
    the parent, so its engine lets go of them without closing them and opens its own (SQLAlchemy's advice for
    multiprocessing). The Redis clients notice the fork themselves."""
    from celery import current_app

    runner = getattr(current_app, "psb_runner", None)
    engine = getattr(getattr(runner, "store", None), "engine", None)
    if engine is not None and hasattr(engine, "dispose"):
        engine.dispose(close=False)


@signals.worker_ready.connect
def _on_worker_ready(sender: Any = None, **_kwargs: Any) -> None:
    """A worker of ours is ready: requeue after a restart of the whole deployment (see CeleryRunner.worker_ready)."""
    celery = getattr(sender, "app", None)
    runner = getattr(celery, "psb_runner", None)
    if runner is not None:
        try:
            runner.worker_ready(requeue=getattr(celery, "psb_requeue_on_start", True))
        except Exception:  # noqa: BLE001 - a worker that cannot requeue still works
            log.exception("requeue at worker start failed")
