"""A simulation whose process is killed (kill -9) in the middle goes on when resumed, asking again no turn but those in
flight at the kill; one cancelled goes on when resumed, asking no turn twice."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from simulate import personas
from tests.conftest import ROOT
from tests.simulate.support import P1, P2, SIMULATOR, Recorder, environment, make_runner, use_as_builtin

MORE = [personas.Persona(f"p{i}", f"Person {i}, a {20 + i}-year-old baker.", "Quiet.") for i in range(3, 7)]
CHILD = """
import json, sys
from kinds import registry
from pipeline.thread_backend import ThreadBackend
from simulate.simulations import Simulations
from storage.store import Store
database, uploads, env, simulation_id = sys.argv[1:]
env = json.loads(env)
ThreadBackend(Simulations(Store(database, registry.tables()), uploads, None, lambda: env)).run(simulation_id)
"""


@pytest.fixture
def builtin_six(tmp_path, monkeypatch):
    use_as_builtin(tmp_path, monkeypatch, P1, P2, *MORE)


def request(rounds: int = 3) -> dict:
    return {"personas": "builtin", "simulator": {"model": SIMULATOR}, "rounds": rounds,
            "methods": [{"name": "A", "model": "model-a"}, {"name": "B", "model": "model-b"}]}


def asked_twice(recorder: Recorder) -> int:
    """Requests (model and messages) the server was sent more than once, counting each repeat."""
    return sum(n - 1 for n in Counter(recorder.keys()).values() if n > 1)


def test_a_killed_run_resumes_asking_again_only_the_calls_in_flight(tmp_path, judge_server, builtin_six):
    recorder = Recorder(judge_server)
    judge_server.latency_s = 0.15
    env = environment(judge_server.url, JUDGE_CONCURRENCY="2")
    runner = make_runner(tmp_path, env)
    simulation = runner.job.create(request())
    total = simulation["total"]
    assert total == 6 * 3 * 3 - 1  # P2 gives its opening

    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "store.sqlite"), str(tmp_path / "uploads"),
                              json.dumps(env), simulation["id"]], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 60
        while runner.job.store.simulation_progress(simulation["id"])["done"] < 12:
            assert child.poll() is None and time.monotonic() < deadline, "the run ended before it was killed"
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(10)
    killed_at = runner.job.store.simulation_progress(simulation["id"])["done"]
    assert 12 <= killed_at < total and runner.job.store.get_simulation(simulation["id"])["status"] == "running"

    assert runner.resume() == [simulation["id"]]  # what a server starting again does
    runner.wait(simulation["id"], 60)
    done = runner.job.store.get_simulation(simulation["id"])
    assert done["status"] == "done" and runner.job.store.simulation_progress(simulation["id"])["done"] == total
    # no more than the endpoint's budget of calls (JUDGE_CONCURRENCY = 2) were in flight at the kill
    assert asked_twice(recorder) <= 2 and len(recorder.requests) <= total + 2
    sessions = [json.loads(line) for line in runner.job.uploads.open(
        f"{runner.job.store.get_upload(done['upload_ids'][0])['sha256']}.jsonl").read().decode().splitlines()]
    assert [len(s["rounds"]) for s in sessions] == [3] * 6


def test_a_cancelled_run_keeps_its_turns_and_resumes_asking_none_twice(tmp_path, judge_server, builtin_six):
    recorder = Recorder(judge_server)
    judge_server.latency_s = 0.1
    runner = make_runner(tmp_path, environment(judge_server.url, JUDGE_CONCURRENCY="2"))
    simulation = runner.job.create(request())
    runner.start(simulation["id"])
    deadline = time.monotonic() + 30
    while runner.job.store.simulation_progress(simulation["id"])["done"] < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert runner.cancel(simulation["id"])
    runner.wait(simulation["id"], 30)
    cancelled = runner.job.store.get_simulation(simulation["id"])
    kept = runner.job.store.simulation_progress(simulation["id"])["done"]
    assert cancelled["status"] == "cancelled" and 5 <= kept < simulation["total"] and cancelled["upload_ids"] == []
    assert len(recorder.requests) == kept  # the calls in flight finished and were kept
    assert not runner.cancel(simulation["id"])  # not running any more

    assert runner.resume_one(simulation["id"])
    runner.wait(simulation["id"], 60)
    assert runner.job.store.get_simulation(simulation["id"])["status"] == "done"
    assert asked_twice(recorder) == 0 and len(recorder.requests) == simulation["total"]
