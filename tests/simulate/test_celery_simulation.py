"""Simulations on Celery workers (CELERY_BROKER_URL): real Redis, real worker processes, the local server playing the
simulator and the methods. Blocks of personas spread over the workers and end in one file; a worker killed with
kill -9 mid-run (then a replacement) costs no more than the calls in flight; tasks a restarted Redis lost are sent
again by the sweep; cancel and resume go through the API."""
from __future__ import annotations

import importlib.util
import json
import time
from collections import Counter

import pytest

from simulate import personas
from simulate.simulations import PERSONAS_PER_BLOCK
from tests.services import Redis
from tests.simulate.support import SIMULATOR, Recorder

pytestmark = pytest.mark.skipif(importlib.util.find_spec("celery") is None, reason="celery is not installed")

if importlib.util.find_spec("celery") is not None:
    from tests.pipeline.test_celery import CONCURRENCY, Deployment, Judge

PEOPLE = [personas.Persona(f"p{i:02d}", f"Person {i}, a {20 + i}-year-old who restores old bicycles.",
                           "Patient, a little shy.") for i in range(10)]
ROUNDS = 3
TOTAL = len(PEOPLE) * ROUNDS * 3  # personas x rounds x (simulator + two methods)


@pytest.fixture
def builtin_ten(tmp_path, monkeypatch):
    path = tmp_path / "builtin.jsonl"
    path.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in PEOPLE), encoding="utf-8")
    monkeypatch.setattr(personas, "BUILTIN", path)


def deployment_on(broker_url: str, folder, extra: dict | None = None):
    judge = Judge(0.03).start()
    judge.reset()
    recorder = Recorder(judge)
    dep = Deployment(folder / "deployment", broker_url, judge, extra=extra)
    dep.recorder = recorder
    try:
        yield dep
    finally:
        dep.stop()
        judge.stop()


@pytest.fixture
def deployment(redis_server, tmp_path, builtin_ten):
    yield from deployment_on(redis_server.url, tmp_path)


@pytest.fixture
def own_broker(tmp_path):
    broker = Redis(tmp_path / "redis")  # its own server: the test restarts it
    yield broker
    broker.stop()


def start(dep) -> str:
    answer = dep.client.post("/api/simulations", json={
        "personas": "builtin", "simulator": {"model": SIMULATOR}, "rounds": ROUNDS,
        "methods": [{"name": "A", "model": "model-a", "system_prompt": "You are A."},
                    {"name": "B", "model": "model-b", "system_prompt": "You are B."}]})
    assert answer.status_code == 202, answer.get_json()
    return answer.get_json()["id"]


def status(dep, simulation_id: str) -> dict:
    return dep.client.get(f"/api/simulations/{simulation_id}").get_json()


def wait_until(dep, simulation_id: str, test, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while not test(body := status(dep, simulation_id)):
        assert time.monotonic() < deadline, (body, dep.logs_tail())
        time.sleep(0.05)
    return body


def repeats(dep) -> int:
    return sum(n - 1 for n in Counter(dep.recorder.keys()).values() if n > 1)


def sessions_of(dep, upload_id: str) -> list[dict]:
    upload = dep.store.get_upload(upload_id)
    with dep.app.extensions["uploads"].open(f"{upload['sha256']}.jsonl") as f:
        return [json.loads(line) for line in f.read().decode().splitlines()]


def test_blocks_of_personas_spread_over_the_workers_and_end_in_one_file(deployment):
    dep = deployment
    for name in ("w1", "w2"):
        dep.start_worker(name)
    for name in ("w1", "w2"):
        dep.wait_ready(name)
    simulation_id = start(dep)
    body = wait_until(dep, simulation_id, lambda b: b["status"] not in ("queued", "running"))
    assert body["status"] == "done", (body, dep.logs_tail())
    assert body["progress"]["done"] == body["progress"]["total"] == TOTAL
    assert repeats(dep) == 0 and len(dep.recorder.requests) == TOTAL
    [upload_id] = body["upload_ids"]
    assert [s["session_id"] for s in sessions_of(dep, upload_id)] == [p.persona_id for p in PEOPLE]
    blocks = -(-len(PEOPLE) // PERSONAS_PER_BLOCK)
    received = sum(dep.log(name).count("psb.simulate_block") for name in ("w1", "w2"))
    assert received >= blocks and all("psb.simulate_block" in dep.log(name) for name in ("w1", "w2"))


def test_a_killed_worker_costs_no_more_than_the_calls_in_flight(deployment):
    dep = deployment
    dep.judge.latency_s = 0.1
    dep.start_worker("w1")
    dep.wait_ready("w1")
    simulation_id = start(dep)
    wait_until(dep, simulation_id, lambda b: b["progress"]["done"] >= TOTAL // 3)
    dep.kill("w1")
    time.sleep(0.3)  # answers to the calls in flight reach a dead worker
    assert status(dep, simulation_id)["progress"]["done"] < TOTAL
    requeued = dep.app.test_cli_runner().invoke(args=["jobs", "requeue"])  # safe to repeat: blocks hold leases
    assert requeued.exit_code == 0 and requeued.stdout.split() == [simulation_id]
    dep.start_worker("w2")
    body = wait_until(dep, simulation_id, lambda b: b["status"] not in ("queued", "running"))
    assert body["status"] == "done" and body["progress"]["done"] == TOTAL, (body, dep.logs_tail())
    assert repeats(dep) <= CONCURRENCY and len(dep.recorder.requests) <= TOTAL + CONCURRENCY


def test_tasks_a_restarted_redis_lost_are_sent_again_by_the_sweep(own_broker, tmp_path, builtin_ten):
    # workers that do not requeue at their start: only the sweep can find the simulation again
    for dep in deployment_on(own_broker.url, tmp_path, {"CELERY_REQUEUE_ON_START": "0"}):
        simulation_id = start(dep)  # its blocks wait in the broker: no worker yet
        own_broker.restart()  # without persistence: the queued blocks are gone
        for name in ("w1", "w2"):
            dep.start_worker(name)
        body = wait_until(dep, simulation_id, lambda b: b["status"] not in ("queued", "running"))
        assert body["status"] == "done" and body["progress"]["done"] == TOTAL, (body, dep.logs_tail())
        assert repeats(dep) == 0 and len(dep.recorder.requests) == TOTAL
        logs = dep.log("w1") + dep.log("w2")
        assert logs.count(f"sweep: sent again 1 simulation(s) whose tasks were lost: {simulation_id}") == 1, logs
        assert "requeued" not in logs


def test_cancel_and_resume_through_the_api(deployment):
    dep = deployment
    dep.judge.latency_s = 0.1
    dep.start_worker("w1")
    dep.wait_ready("w1")
    simulation_id = start(dep)
    wait_until(dep, simulation_id, lambda b: b["progress"]["done"] >= 5)
    assert dep.client.post(f"/api/simulations/{simulation_id}/cancel").status_code == 202
    assert status(dep, simulation_id)["status"] == "cancelled"
    time.sleep(1.0)  # the blocks notice within STATUS_CHECK_S and their calls in flight end
    stopped = status(dep, simulation_id)["progress"]["done"]
    assert stopped < TOTAL and len(dep.recorder.requests) == stopped
    assert dep.client.post(f"/api/simulations/{simulation_id}/resume").status_code == 202
    body = wait_until(dep, simulation_id, lambda b: b["status"] not in ("queued", "running"))
    assert body["status"] == "done" and body["progress"]["done"] == TOTAL, (body, dep.logs_tail())
    assert repeats(dep) == 0
