"""The Celery app of the dashboard and its tasks, when CELERY_BROKER_URL is set (docs/team-deployment.md); nothing
here is imported without a broker.

`init_app` makes the Flask app's Celery app (Flask's "Background Tasks with Celery": `app.extensions["celery"]`, its
tasks run in the app's context), which `celery -A app:celery_app worker` runs. `Workers.add` gives a job type
(pipeline/job.py) its Celery backend and registers the three tasks of its steps (pipeline/celery_backend.py):

- evaluations: `psb.plan`, `psb.judge_block`, `psb.score`;
- simulations: `psb.simulate_plan`, `psb.simulate_block`, `psb.simulate_finish`;
- any other job type: `psb.<name>_plan`, `psb.<name>_block`, `psb.<name>_finish`.

A task never fails its job for a broker or database outage (it gives up and the sweep takes the job up again), nor
when its worker ended it; any other error is recorded as the job's failure. The first worker of a deployment (no
worker kept the "alive" key in the last ALIVE_S seconds) sends every unfinished job again, and every worker sweeps
for jobs whose tasks the broker lost every CELERY_SWEEP_S seconds. What the worker signals need of a deployment is
its `Workers`, kept by this module for each Celery app.
"""
from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import kombu.exceptions
import redis
from celery import Celery, Task, signals
from celery.utils.nodenames import default_nodename, host_format
from flask import Flask
from kombu.transport import redis as kombu_redis

from common import collector
from judge import keep_connections, load_client, release_connections
from pipeline.celery_backend import Busy, CeleryBackend
from pipeline.job import J
from storage.database import database_unreachable
from storage.store import Store

log = logging.getLogger(__name__)

DEFAULT_QUEUE = "personasteer"
DEFAULT_VISIBILITY_TIMEOUT = 3600
DEFAULT_SWEEP_S = 20.0  # CELERY_SWEEP_S: between two sweeps for jobs whose tasks were lost
# A step's lease (renewed every third of it while its worker lives): how long a killed worker's block keeps its
# sessions from the sweep. Shorter than the visibility timeout, so that a task Redis hands out again finds it expired.
LEASE_S = 15.0
ALIVE_S = 30  # workers keep a key alive this long (renewed every ALIVE_S / 3): "a deployment is running"
STEPS = ("plan", "block", "finish")
TASKS = {  # the task names of the job types that had them before there were job types
    "evaluation": {"plan": "psb.plan", "block": "psb.judge_block", "finish": "psb.score"},
    "simulation": {"plan": "psb.simulate_plan", "block": "psb.simulate_block", "finish": "psb.simulate_finish"},
}
# shared=False: each task belongs to the Celery app it is registered on (Celery would otherwise add it to every app
# made later in the process, whose own task of the same name it would shadow, running the first app's backend)
TASK_OPTIONS = {"bind": True, "max_retries": None, "acks_late": True, "reject_on_worker_lost": True,
                "shared": False}


def task_names(job_name: str) -> dict[str, str]:
    """Step -> the name of its task, for a job type."""
    return TASKS.get(job_name) or {step: f"psb.{job_name}_{step}" for step in STEPS}


# -- settings ------------------------------------------------------------------------------------------------------


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


def sweep_interval(config: Mapping[str, Any]) -> float:
    """CELERY_SWEEP_S: seconds between two sweeps for work whose tasks the broker lost (a number > 0)."""
    return _seconds(config, "CELERY_SWEEP_S", DEFAULT_SWEEP_S)


def visibility_timeout(config: Mapping[str, Any]) -> float:
    """Seconds after which the broker hands a task that was not acknowledged (its worker died) to another worker."""
    return _seconds(config, "CELERY_VISIBILITY_TIMEOUT", DEFAULT_VISIBILITY_TIMEOUT)


def lease_seconds(config: Mapping[str, Any]) -> float:
    """How long a step's lease lasts: LEASE_S, or half the visibility timeout when that is shorter (2 s at least)."""
    return max(2.0, min(LEASE_S, visibility_timeout(config) / 2))


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
        return super()._connparams(asynchronous)  # type: ignore[misc]  # private to kombu: not in its stubs


class RedisTransport(kombu_redis.Transport):
    """kombu's Redis transport, whose channels survive the loss of the broker (see _RedisChannel)."""

    Channel = _RedisChannel


# -- how a task ends -----------------------------------------------------------------------------------------------


def transient(exc: BaseException) -> bool:
    """An error of the broker or the database being out of reach for now (a restart): a task that meets it gives
    up without failing its job, which the sweep takes up again."""
    return isinstance(exc, (redis.exceptions.RedisError, kombu.exceptions.OperationalError)) or \
        database_unreachable(exc)


def stopped_from_outside(exc: BaseException) -> BaseException | None:
    """The SystemExit or KeyboardInterrupt behind an error, if any: a task its worker terminated (Celery ends a
    late-acknowledged task whose broker connection was lost) can surface as another error raised while it unwound
    (an event loop stopped mid-call, say); that is no failure of the job, whose task is delivered again."""
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        if isinstance(found, (SystemExit, KeyboardInterrupt)):
            return found
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return None


def _task(backend: CeleryBackend[Any], step: Callable[..., None]) -> Callable[..., None]:
    """A step of a backend as a task's body: tried again later while another delivery holds its lease, and ending
    its job in a visible state whatever else went wrong (see the module's docstring)."""
    name = backend.job.name

    def body(task: Task, job_id: str, *args: Any) -> None:
        try:
            step(job_id, *args)
        except Busy:
            raise task.retry(countdown=backend.lease_s / 2, max_retries=None)
        except Exception as exc:
            stopped = stopped_from_outside(exc)
            if stopped is not None:  # its worker ended it (a lost broker): not the job's failure
                log.warning("%s of %s %s was stopped by its worker", task.name, name, job_id)
                raise stopped from exc
            if transient(exc):  # the broker or the database is restarting: the sweep takes it up again
                log.warning("%s of %s %s gave up: %s: %s", task.name, name, job_id, type(exc).__name__, exc)
                return
            log.exception("%s %s failed", name, job_id)
            backend.job.failed(job_id, exc)

    body.__name__ = body.__qualname__ = step.__name__
    body.__doc__ = step.__doc__
    return body


# -- the deployment ------------------------------------------------------------------------------------------------


@dataclass
class Workers:
    """A deployment's Celery side: its Celery app, the broker's client, and the backend of each job type, whose work
    the first worker sends again and every worker sweeps."""

    celery: Any
    redis: redis.Redis
    store: Store
    lease_s: float
    sweep_s: float
    requeue_on_start: bool
    backends: list[CeleryBackend[Any]] = field(default_factory=list)

    def add(self, job: J) -> CeleryBackend[J]:
        """The Celery backend of a job type, its three tasks registered on the Celery app."""
        names = task_names(job.name)
        backend = CeleryBackend(job, self.celery, self.redis, names, self.lease_s, self.sweep_s)
        for step, method in (("plan", backend.plan), ("block", backend.block), ("finish", backend.finish)):
            self.celery.task(name=names[step], **TASK_OPTIONS)(_task(backend, method))
        self.backends.append(backend)
        return backend

    def worker_ready(self) -> None:
        """At a worker's start: the first worker of a deployment sends every unfinished job again (unless
        CELERY_REQUEUE_ON_START is off); every worker keeps the "alive" key and sweeps."""
        key = f"psb:{self.celery.conf.task_default_queue}:workers-alive"
        first = self.redis.set(key, os.getpid(), nx=True, ex=ALIVE_S)
        if first and self.requeue_on_start:
            for backend in self.backends:
                ids = backend.requeue()
                if ids:
                    log.warning("requeued %d unfinished %s(s): %s", len(ids), backend.job.name, ", ".join(ids))

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
            for backend in self.backends:
                try:
                    backend.sweep()
                except Exception:  # noqa: BLE001 - the broker or the database may be down: the next sweep retries
                    log.warning("sweep failed", exc_info=True)


_deployments: weakref.WeakKeyDictionary[Any, Workers] = weakref.WeakKeyDictionary()  # Celery app -> its Workers


def workers_of(celery: Any) -> Workers | None:
    """The Workers of a Celery app made by init_app, None for any other (or none)."""
    return None if celery is None else _deployments.get(celery)


def init_app(app: Flask, broker_url: str, store: Store) -> Workers:
    """The Celery app of a Flask app (`app.extensions["celery"]`, its tasks run in the app's context) and its
    deployment's Workers, to which the job types are added."""

    class FlaskTask(Task):
        def __call__(self, *args: object, **kwargs: object) -> object:
            with app.app_context():
                return self.run(*args, **kwargs)

    app.config["CELERY"] = {**celery_config(app.config, broker_url), **app.config.get("CELERY", {})}
    celery = Celery(app.name, task_cls=FlaskTask)
    celery.config_from_object(app.config["CELERY"])
    celery.set_default()
    # Celery's Worker is a cached property an instance may replace (the stubs type it read-only)
    setattr(celery, "Worker", _unique_node_names(celery.Worker))
    workers = Workers(
        celery, redis.Redis.from_url(app.config["CELERY"]["broker_url"]), store,
        lease_s=lease_seconds(app.config), sweep_s=sweep_interval(app.config),
        requeue_on_start=str(_setting(app.config, "CELERY_REQUEUE_ON_START", "1")).lower() not in (
            "0", "false", "no", "off"))
    _deployments[celery] = workers
    app.extensions["celery"] = celery
    return workers


def _unique_node_names(worker: type) -> type:
    """The worker class, with `worker<pid>@<host>` as its default node name instead of Celery's `celery@<host>`, so
    that two workers started with the same command on one machine do not collide; another `-n NAME@%h` still wins."""
    celery_default = host_format(default_nodename(""))  # what the command line passes when -n is not given

    class Worker(worker):
        def __init__(self, hostname: str | None = None, **kwargs: Any):
            if hostname in (None, "", celery_default):
                hostname = f"worker{os.getpid()}@{socket.gethostname()}"
            super().__init__(hostname=hostname, **kwargs)

    return Worker


@signals.worker_init.connect
def _on_worker_init(**_kwargs: Any) -> None:
    """A worker starts, its app built: the judge's HTTP client is loaded, then what it loaded (some 100,000 objects
    that live as long as the worker) leaves the garbage collector's rounds, and young collections are spaced for
    judging (common/collector.py); before the pool starts, so that its processes inherit all that."""
    load_client()
    collector.settle_for_judging()


@signals.worker_process_init.connect
def _on_worker_process_init(**_kwargs: Any) -> None:
    """A child of the prefork pool (the worker's default) starts: the database connections it inherited belong to
    the parent, so its engine lets go of them without closing them and opens its own (SQLAlchemy's advice for
    multiprocessing). The Redis clients notice the fork themselves. It runs its tasks one after another on this
    thread, so a block's judge connections stay open for the next block (judge.engine.keep_connections)."""
    from celery.app import app_or_default

    keep_connections()

    workers = workers_of(app_or_default())  # the current Celery app itself, not the proxy of celery.current_app
    engine = getattr(workers.store, "engine", None) if workers else None
    if engine is not None and hasattr(engine, "dispose"):
        engine.dispose(close=False)


@signals.worker_process_shutdown.connect
def _on_worker_process_shutdown(**_kwargs: Any) -> None:
    """A child of the prefork pool ends: the judge connections its blocks kept are closed."""
    release_connections()


@signals.worker_ready.connect
def _on_worker_ready(sender: Any = None, **_kwargs: Any) -> None:
    """A worker of ours is ready: requeue after a restart of the whole deployment (see Workers.worker_ready)."""
    workers = workers_of(getattr(sender, "app", None))
    if workers is not None:
        try:
            workers.worker_ready()
        except Exception:  # noqa: BLE001 - a worker that cannot requeue still works
            log.exception("requeue at worker start failed")
