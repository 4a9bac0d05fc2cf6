"""The job interface (pipeline/job.py), tested once per backend for each job type, through the backend's own methods:
the thread backend, and the Celery backend on the test Redis with real worker processes; evaluations and
simulations, against the local server (the judge, the simulated users and the methods).

For each: a started job's progress rises; cancel stops it (the calls in flight kept, nothing asked after) and resume
finishes it asking nothing twice; requeue takes up a job that nothing runs (with Celery, its task dropped by the
broker; on threads, never started by this process); a job whose worker process was killed with kill -9 mid-block is
taken up and finishes, asking again at most the calls in flight. And scoring a finished evaluation again once
people's ratings changed is a rescore job on the same backend (run by a worker with a broker), answered at once.
"""
from __future__ import annotations

import inspect
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
import redis

from app import create_app
from pipeline.evaluations import create_evaluation
from simulate import personas
from tests.conftest import ROOT
from tests.judge_server import JudgeServer
from tests.pipeline.test_celery import WORKERS, Deployment, dialogue
from tests.simulate.support import SIMULATOR, answer

CONCURRENCY = 4  # JUDGE_CONCURRENCY: the most calls a killed process can have had in flight
# Judge.run's bound on what a killed process asks again is per run: CONCURRENCY calls in flight or answered and not
# yet kept (a slot goes back to the budget when its call ends, its answer is kept up to KEEP_EVERY_S later). Runs at
# once in the killed process: one per block a worker thread judges (test_celery.WORKERS threads), and a simulation's
# speakers (the simulated user, two methods) each on a run of their own.
SPEAKERS = 3
SESSIONS = 12  # of an evaluation: 12 x 5 rounds x 2 methods x 2 modes = 240 judgments (2 blocks on Celery, of 200)
PEOPLE, ROUNDS = 10, 4  # of a simulation: 10 x 4 rounds x SPEAKERS = 120 turns (3 blocks of personas on Celery)
BACKENDS = ("thread", "celery")


class Calls:
    """Every chat request the local server answers, by model and messages (each judgment and each turn is one)."""

    def __init__(self, server: JudgeServer):
        self.counted: Counter = Counter()
        self._lock = threading.Lock()
        server.chat = lambda body: answer(body["model"], body["messages"])  # the simulated user and the methods
        server.hook = self._count

    def _count(self, request: dict) -> None:
        key = (request["body"]["model"], json.dumps(request["body"]["messages"], sort_keys=True))
        with self._lock:
            self.counted[key] += 1

    @property
    def made(self) -> int:
        return sum(self.counted.values())

    @property
    def repeated(self) -> int:
        """Requests that were sent before: asked (and paid) twice."""
        return sum(n - 1 for n in self.counted.values())


class Site(Deployment):
    """An app on its own database and folders with the local server as every endpoint; with a broker, on its own
    queue, Celery workers started as processes (Deployment's) and none at first. Workers do not requeue at their
    start, so that only what a test does sends work again."""

    def __init__(self, folder: Path, server: JudgeServer, broker_url: str | None):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.judge, self.workers = folder, server, {}
        self.queue = f"psb-test-{uuid.uuid4().hex[:8]}"
        self.judge_env = {"JUDGE_BASE_URL": server.url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test",
                          "JUDGE_CONCURRENCY": str(CONCURRENCY), "JUDGE_MAX_RETRIES": "0", "JUDGE_TIMEOUT_S": "10"}
        celery = {"CELERY_BROKER_URL": broker_url, "CELERY_QUEUE": self.queue, "CELERY_VISIBILITY_TIMEOUT": "3",
                  "CELERY_SWEEP_S": "1", "CELERY_REQUEUE_ON_START": "0",
                  "CELERY_BLOCK_JUDGMENTS": "200"} if broker_url else {"CELERY_BROKER_URL": ""}
        self.config = {"DATABASE": str(folder / "db.sqlite"), "UPLOAD_FOLDER": str(folder / "uploads"),
                       "RESULTS_FOLDER": str(folder / "results"), **celery}
        self.env = {**self.config, **self.judge_env}  # the workers' environment
        self.app_config = {**self.config, "TESTING": True, "SECRET_KEY": "test", "RESUME_ON_START": False,
                           "JUDGE_KEY_FILE": str(folder / "judge_api_key"), "JUDGE_ENV": self.judge_env}
        self.app = create_app(self.app_config)
        self.store = self.app.extensions["store"]
        self.client = self.app.test_client()


class EvaluationJobs:
    """Evaluations of a dialogue file whose every judge prompt is its own (no answer from the cache)."""

    name, extension = "evaluation", "runner"
    total = SESSIONS * 5 * 2 * 2

    def __init__(self, site: Site):
        self.site = site

    def create(self) -> str:
        upload = self.site.client.post("/api/uploads", data={"file": (io.BytesIO(dialogue(SESSIONS, uuid.uuid4().hex)),
                                                                      "log.jsonl")})
        assert upload.status_code == 201, upload.get_json()
        environ = self.site.app.extensions["judge_settings"].environ()
        return create_evaluation(self.site.store, upload.get_json()["id"], environ=environ)["id"]

    def kept_when_cancelled(self, job_id: str) -> bool:
        """A cancelled evaluation keeps a partial result."""
        return self.site.store.get_evaluation(job_id)["result"] is not None


class SimulationJobs:
    """Simulations of PEOPLE personas of their own (no answer from the cache), two methods, ROUNDS rounds."""

    name, extension = "simulation", "simulations"
    total = PEOPLE * ROUNDS * 3

    def __init__(self, site: Site):
        self.site = site

    def create(self) -> str:
        tag = uuid.uuid4().hex[:8]
        path = self.site.folder / f"personas-{tag}.jsonl"
        path.write_text("".join(json.dumps(personas.Persona(f"p{i:02d}", f"Person {i} ({tag}), who restores old "
                                                            "bicycles.", "Patient.").to_dict()) + "\n"
                                for i in range(PEOPLE)), encoding="utf-8")
        original = personas.BUILTIN
        personas.BUILTIN = path  # read when the simulation is created, into its settings
        try:
            return self.site.app.extensions["simulations"].job.create({
                "personas": "builtin", "simulator": {"model": SIMULATOR}, "rounds": ROUNDS,
                "methods": [{"name": "A", "model": "model-a"}, {"name": "B", "model": "model-b"}]})["id"]
        finally:
            personas.BUILTIN = original

    def kept_when_cancelled(self, job_id: str) -> bool:
        """A cancelled simulation keeps its turns for a resume, and writes no file."""
        return self.site.store.get_simulation(job_id)["upload_ids"] == []


JOB_TYPES = {"evaluation": EvaluationJobs, "simulation": SimulationJobs}


@pytest.fixture
def server():
    with JudgeServer(latency_s=0.05) as local:
        yield local


def site_for(backend: str, folder: Path, server: JudgeServer, request) -> Site:
    return Site(folder, server, request.getfixturevalue("redis_server").url if backend == "celery" else None)


def backend_of(site: Site, jobs) -> object:
    return site.app.extensions[jobs.extension]


def status(site: Site, jobs, job_id: str) -> str:
    return backend_of(site, jobs).job.status(job_id)


def wait_until(test, what: str, site: Site, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while not (found := test()):
        assert time.monotonic() < deadline, f"{what}\n{site.logs_tail()}"
        time.sleep(0.02)
    return found


def wait_finished(site: Site, jobs, job_id: str, timeout: float = 90) -> dict:
    backend = backend_of(site, jobs)
    wait_until(lambda: status(site, jobs, job_id) not in ("queued", "running"), "the job did not finish", site,
               timeout)
    backend.wait(job_id, 10)  # a thread records its end just before it ends
    return backend.progress(job_id)


def quiet(site: Site, calls: Calls, seconds: float = 1.5) -> int:
    """Wait until the server has had no request for `seconds`; the requests made by then."""
    seen, since = calls.made, time.monotonic()
    deadline = since + 30
    while time.monotonic() - since < seconds:
        assert time.monotonic() < deadline, "the server is still being asked"
        if calls.made != seen:
            seen, since = calls.made, time.monotonic()
        time.sleep(0.05)
    return seen


@pytest.mark.parametrize("job_type", JOB_TYPES)
@pytest.mark.parametrize("backend_name", BACKENDS)
def test_start_progress_cancel_and_resume(backend_name, job_type, server, tmp_path, request):
    site = site_for(backend_name, tmp_path, server, request)
    jobs = JOB_TYPES[job_type](site)
    calls = Calls(server)
    backend = backend_of(site, jobs)
    try:
        if backend_name == "celery":
            site.start_worker("w1")
            site.wait_ready("w1")
        job_id = jobs.create()
        assert backend.progress(job_id)["done"] == 0 and backend.waiting(job_id) == "worker"  # not started
        backend.start(job_id)
        seen = [backend.progress(job_id)]
        wait_until(lambda: seen.append(backend.progress(job_id)) or seen[-1]["done"] >= jobs.total // 4,
                   "no progress", site)
        done = [p["done"] for p in seen]
        assert done == sorted(done) and done[0] < done[-1] < jobs.total
        assert all(p["total"] == jobs.total for p in seen)
        assert any(p["waiting"] is None for p in seen)  # while it runs, it waits for nothing

        assert backend.cancel(job_id)
        made = quiet(site, calls)  # the calls in flight end; no other is made
        progress = wait_finished(site, jobs, job_id, 30)
        assert status(site, jobs, job_id) == "cancelled" and progress["done"] == made < jobs.total
        assert wait_until(lambda: jobs.kept_when_cancelled(job_id), "the cancelled job was not recorded", site, 20)
        assert not backend.cancel(job_id)  # not running any more

        assert backend.resume_one(job_id)
        assert not backend.resume_one(job_id)  # running again: nothing to resume
        progress = wait_finished(site, jobs, job_id)
        assert status(site, jobs, job_id) == "done", site.logs_tail()
        assert progress["done"] == progress["total"] == jobs.total
        assert calls.made == jobs.total and calls.repeated == 0  # resuming asked only what was never asked
        assert not backend.resume_one(job_id) and not backend.cancel(job_id)  # finished
    finally:
        site.stop()


@pytest.mark.parametrize("job_type", JOB_TYPES)
@pytest.mark.parametrize("backend_name", BACKENDS)
def test_requeue_takes_up_a_job_nothing_runs(backend_name, job_type, server, tmp_path, request):
    site = site_for(backend_name, tmp_path, server, request)
    jobs = JOB_TYPES[job_type](site)
    calls = Calls(server)
    backend = backend_of(site, jobs)
    try:
        job_id = jobs.create()
        if backend_name == "celery":  # started with no worker up, then the broker loses its task
            backend.start(job_id)
            broker = redis.Redis.from_url(site.env["CELERY_BROKER_URL"])
            assert broker.llen(site.queue) == 1
            broker.delete(site.queue)
        assert status(site, jobs, job_id) == "queued" and backend.waiting(job_id) == "worker"
        time.sleep(0.5)
        assert calls.made == 0

        assert backend.requeue() == [job_id]
        if backend_name == "celery":
            assert broker.llen(site.queue) == 1  # sent again, before any worker could see it
            site.start_worker("w1")
        progress = wait_finished(site, jobs, job_id)
        assert status(site, jobs, job_id) == "done", site.logs_tail()
        assert progress["done"] == progress["total"] == jobs.total
        assert calls.made == jobs.total and calls.repeated == 0
        assert backend.requeue() == []  # nothing is left unfinished
    finally:
        site.stop()


RUN_ONE = """
import json, sys
from app import create_app
config, extension, job_id = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
create_app(config).extensions[extension].run(job_id)
"""


@pytest.mark.parametrize("job_type", JOB_TYPES)
@pytest.mark.parametrize("backend_name", BACKENDS)
def test_a_job_whose_worker_was_killed_is_taken_up(backend_name, job_type, server, tmp_path, request):
    site = site_for(backend_name, tmp_path, server, request)
    jobs = JOB_TYPES[job_type](site)
    calls = Calls(server)
    backend = backend_of(site, jobs)
    child = None
    try:
        job_id = jobs.create()
        if backend_name == "celery":
            site.start_worker("w1")
            backend.start(job_id)
        else:  # the thread backend of another process, which runs the job in its foreground
            child = subprocess.Popen([sys.executable, "-c", RUN_ONE, json.dumps(site.app_config), jobs.extension,
                                      job_id], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        wait_until(lambda: backend.progress(job_id)["done"] >= jobs.total // 3, "no progress before the kill", site)
        if child is not None:
            child.send_signal(signal.SIGKILL)
            child.wait(10)
        else:
            site.kill("w1")
        time.sleep(0.3)  # answers to the calls in flight reach a dead process
        killed_at = backend.progress(job_id)["done"]
        assert killed_at < jobs.total and status(site, jobs, job_id) == "running"

        if backend_name == "celery":  # another worker takes its block up (redelivered, or sent again by the sweep)
            site.start_worker("w2")
        else:  # as a server that starts again does
            assert backend.resume() == [job_id]
        progress = wait_finished(site, jobs, job_id)
        assert status(site, jobs, job_id) == "done", site.logs_tail()
        assert progress["done"] == progress["total"] == jobs.total
        assert len(calls.counted) == jobs.total  # every judgment or turn was asked
        runs = (WORKERS if backend_name == "celery" else 1) * (SPEAKERS if job_type == "simulation" else 1)
        assert calls.repeated <= CONCURRENCY * runs, calls.repeated  # only calls the runs had not kept were asked again
    finally:
        if child is not None and child.poll() is None:
            child.kill()
        site.stop()


def rescore_state(site: Site, job_id: str) -> dict:
    return site.client.get(f"/api/evaluations/{job_id}/rescore").get_json()


def wait_rescored(site: Site, job_id: str) -> dict:
    return wait_until(lambda: (state := rescore_state(site, job_id))["status"] not in ("queued", "running") and state,
                      "the rescore job did not end", site)


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_a_kind_scores_a_finished_evaluation_again_on_either_backend(backend_name, server, tmp_path, request):
    # people's ratings attached to a dialogue evaluation, the rating page's "Update the figures" and ratings removed
    # each start a rescore job (pipeline/rescores.py) on the evaluations' backend and answer at once; with a broker
    # only a worker runs it
    site = site_for(backend_name, tmp_path, server, request)
    try:
        jobs = EvaluationJobs(site)
        job_id = jobs.create()
        backend_of(site, jobs).run(job_id)  # in the foreground, broker or not (as `flask score` does)
        assert status(site, jobs, job_id) == "done"
        rescores = site.app.extensions["rescores"].backend
        assert type(rescores).__name__ == {"thread": "ThreadBackend", "celery": "CeleryBackend"}[backend_name]
        assert rescore_state(site, job_id)["error"].startswith("Evaluation ")  # 404: never scored again yet
        ratings = "session_id,round,method,total\ns000,1,A,50\ns000,1,B,70\n".encode()
        attached = site.client.post(f"/api/evaluations/{job_id}/human-ratings",
                                    data={"file": (io.BytesIO(ratings), "people.csv")},
                                    content_type="multipart/form-data")
        assert attached.status_code == 202, attached.get_data(as_text=True)
        assert attached.get_json()["ratings"] == 2 and attached.headers["Location"].endswith(f"/{job_id}/rescore")
        if backend_name == "celery":
            time.sleep(1.5)  # no worker yet: the job waits for one, and the result is as it was
            assert rescore_state(site, job_id)["status"] == "queued" and rescores.waiting(job_id) == "worker"
            assert "agreement" not in site.client.get(f"/api/evaluations/{job_id}").get_json()["result"]
            site.start_worker("w1")
        done = wait_rescored(site, job_id)
        assert done["status"] == "done" and done["error"] is None and done["finished_at"] >= done["requested_at"]
        result = site.client.get(f"/api/evaluations/{job_id}").get_json()["result"]
        assert result["agreement"]["human"]["ratings"] == 2 and status(site, jobs, job_id) == "done"
        if backend_name == "celery":  # the worker ran its three steps
            assert all(f"psb.rescore_{step}" in site.log("w1") for step in ("plan", "block", "finish"))

        store = site.store
        store.set_result(job_id, {**result, "stale": True})  # what the next rescore replaces
        page = site.client.get(f"/evaluations/{job_id}").get_data(as_text=True)
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        assert site.client.post(f"/evaluations/{job_id}/rating/rescore", data={"csrf_token": token}).status_code == 302
        assert wait_rescored(site, job_id)["status"] == "done"
        assert "stale" not in store.get_evaluation(job_id)["result"]
        removed = site.client.delete(f"/api/evaluations/{job_id}/human-ratings")
        assert removed.status_code == 202 and removed.get_json()["ratings"] == 0
        assert wait_rescored(site, job_id)["status"] == "done"
        assert "agreement" not in store.get_evaluation(job_id)["result"]
    finally:
        site.stop()


def test_requeue_by_hand_needs_a_broker(server, tmp_path, request):
    # without one, the server itself resumes unfinished work when it starts: the command says so and changes nothing
    site = site_for("thread", tmp_path, server, request)
    job_id = EvaluationJobs(site).create()
    done = site.app.test_cli_runner().invoke(args=["jobs", "requeue"])
    assert done.exit_code == 2 and "no broker is configured (CELERY_BROKER_URL)" in done.output
    assert status(site, EvaluationJobs(site), job_id) == "queued" and server.requests == 0


def test_the_celery_app_keeps_no_state_of_its_own(tmp_path):
    # the deployment's backends are found through celery_tasks.workers_of, not through attributes set on the Celery app
    from pipeline.celery_backend import CeleryBackend
    from pipeline.celery_tasks import workers_of

    config = {"DATABASE": str(tmp_path / "db.sqlite"), "UPLOAD_FOLDER": str(tmp_path / "uploads"),
              "RESULTS_FOLDER": str(tmp_path / "results"), "TESTING": True, "SECRET_KEY": "test",
              "RESUME_ON_START": False}
    # two apps in one process (the tests, a worker's app and a CLI's): each Celery app runs its tasks on its own
    # backends, never on those of an app made before it
    before = create_app({**config, "CELERY_BROKER_URL": "redis://127.0.0.1:9/1"}).extensions["celery"]
    app = create_app({**config, "CELERY_BROKER_URL": "redis://127.0.0.1:9/0"})  # no connection is made to build it
    celery = app.extensions["celery"]
    assert [name for name in vars(celery) if name.startswith("psb")] == []
    workers = workers_of(celery)
    assert workers is not None and workers.backends == [app.extensions["runner"], app.extensions["simulations"],
                                                        app.extensions["rescores"].backend]
    assert all(isinstance(backend, CeleryBackend) for backend in workers.backends)
    tasks = {name: task for name, task in celery.tasks.items() if name.startswith("psb.")}
    assert set(tasks) == {"psb.plan", "psb.judge_block", "psb.score", "psb.simulate_plan", "psb.simulate_block",
                          "psb.simulate_finish", "psb.rescore_plan", "psb.rescore_block", "psb.rescore_finish"}
    for name, task in tasks.items():  # the backend each task's body runs a step of
        assert inspect.getclosurevars(task.run).nonlocals["backend"] in workers.backends, name
    assert set(before.tasks) == set(celery.tasks) and workers_of(before) is not workers
    assert workers_of(create_app({**config, "CELERY_BROKER_URL": ""}).extensions.get("celery")) is None
