"""Evaluations on Celery workers (CELERY_BROKER_URL): real Redis, real worker processes, the local judge, and
PostgreSQL when it is installed (else SQLite files shared by the processes).

One large evaluation spread over two workers ends with the same metrics as the in-process runner; workers killed
with kill -9 mid-run (then a replacement) still finish it without paying for more than the calls in flight; cancel
and resume go through the API; a kind without a judge is scored by a worker; and gunicorn with two processes
answers from both, never runs an evaluation itself, and reports the same live progress from either.
"""
from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis

from app import create_app
from pipeline.evaluations import create_evaluation
from tests.conftest import ROOT
from tests.judge_server import JudgeServer
from tests.services import Redis, free_port, postgres_bin

pytestmark = pytest.mark.skipif(importlib.util.find_spec("celery") is None, reason="celery is not installed")

CONCURRENCY = 8  # JUDGE_CONCURRENCY of every deployment below
WORKERS = 2
VISIBILITY_S = 3  # CELERY_VISIBILITY_TIMEOUT: a killed worker's tasks come back after this long
LATENCY_S = 0.02
SESSIONS, ROUNDS, METHODS, MODES = 150, 5, ("A", "B"), 2
TOTAL = SESSIONS * ROUNDS * len(METHODS) * MODES  # 3,000 judgments
FAILED_RETRY_S = 3  # JUDGE_FAILED_RETRY_S: pauses of 0.3, 0.6, 1.2 and 0.9 s before asking failed judgments again
SWEEP_S = 1  # CELERY_SWEEP_S: an evaluation whose tasks were lost is sent again within two sweeps
BLOCK_JUDGMENTS = 200  # CELERY_BLOCK_JUDGMENTS: the tests' evaluations of a few hundred judgments make several blocks


def dialogue(sessions: int, tag: str = "") -> bytes:
    """A dialogue file whose every reply (so every judge prompt) is different, also from those of another tag."""
    lines = []
    for i in range(sessions):
        sid = f"s{i:03d}"
        lines.append({"session_id": sid, "user_profile": f"profile {i}: a nurse who runs marathons",
                      "user_personality": "Cheerful and direct.",
                      "rounds": [{"round": k, "user_message": f"message {k} of {sid}",
                                  "responses": {m: f"reply {k} from {m} to {sid}{tag}" for m in METHODS}}
                                 for k in range(1, ROUNDS + 1)]})
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def judge_env(server: JudgeServer) -> dict:
    return {"JUDGE_BASE_URL": server.url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test",
            "JUDGE_CONCURRENCY": str(CONCURRENCY), "JUDGE_MAX_RETRIES": "0", "JUDGE_TIMEOUT_S": "10",
            "JUDGE_FAILED_RETRY_S": str(FAILED_RETRY_S)}


def prompt_key(request: dict) -> str:
    return hashlib.sha256(json.dumps(request["body"]["messages"], sort_keys=True).encode()).hexdigest()


class Judge(JudgeServer):
    """The local judge, also counting the requests of each distinct prompt."""

    def __init__(self, latency_s: float):
        super().__init__(latency_s=latency_s)
        self.prompts: Counter = Counter()
        self._count_lock = threading.Lock()

    def count(self, request: dict) -> None:
        with self._count_lock:
            self.prompts[prompt_key(request)] += 1

    def reset(self) -> None:
        super().reset()
        self.prompts = Counter()
        self.hook = self.count


class Deployment:
    """A database, folders, a broker queue and a judge shared by a web app in this process (its test client) and
    Celery workers started as processes, like machines of one deployment."""

    def __init__(self, folder: Path, redis_url: str, judge: Judge, database_url: str | None = None,
                 extra: dict | None = None):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.judge = folder, judge
        self.queue = f"psb-test-{uuid.uuid4().hex[:8]}"
        database = {"DATABASE_URL": database_url} if database_url else {"DATABASE": str(folder / "db.sqlite")}
        self.env = {**database, "UPLOAD_FOLDER": str(folder / "uploads"), "RESULTS_FOLDER": str(folder / "results"),
                    "CELERY_BROKER_URL": redis_url, "CELERY_QUEUE": self.queue,
                    "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_S), "CELERY_SWEEP_S": str(SWEEP_S),
                    "CELERY_BLOCK_JUDGMENTS": str(BLOCK_JUDGMENTS), **(extra or {}), **judge_env(judge)}
        self.app = create_app({**{k: v for k, v in self.env.items() if not k.startswith("JUDGE_")},
                               "TESTING": True, "SECRET_KEY": "test", "JUDGE_KEY_FILE": str(folder / "judge_api_key"),
                               "WTF_CSRF_ENABLED": False, "JUDGE_ENV": judge_env(judge)})
        self.store = self.app.extensions["store"]
        self.client = self.app.test_client()
        self.workers: dict[str, subprocess.Popen] = {}

    def start_worker(self, name: str, pool: str = "threads", concurrency: int = WORKERS) -> subprocess.Popen:
        """`celery -A app:celery_app worker` in its own process, logging to <folder>/<name>.log."""
        log = (self.folder / f"{name}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "app:celery_app", "worker", f"--pool={pool}",
             f"--concurrency={concurrency}", "-Q", self.queue, "-n", f"{name}@%h", "--without-heartbeat",
             "--without-mingle", "--without-gossip", "--loglevel=INFO"],
            cwd=ROOT, env={**os.environ, **self.env}, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.workers[name] = process
        return process

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")

    def wait_ready(self, name: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while " ready." not in self.log(name):
            assert self.workers[name].poll() is None, self.log(name)
            assert time.monotonic() < deadline, self.log(name)
            time.sleep(0.1)

    def kill(self, name: str) -> None:
        process = self.workers[name]
        process.send_signal(signal.SIGKILL)
        process.wait(10)

    def stop(self) -> None:
        for process in self.workers.values():
            if process.poll() is None:
                process.kill()
                process.wait(10)

    def upload(self, data: bytes, name: str = "log.jsonl") -> str:
        resp = self.client.post("/api/uploads", data={"file": (io.BytesIO(data), name)},
                                content_type="multipart/form-data")
        assert resp.status_code == 201, resp.get_json()
        return resp.get_json()["id"]

    def evaluate(self, upload_id: str) -> str:
        resp = self.client.post("/api/evaluations", json={"upload_id": upload_id})
        assert resp.status_code == 202, resp.get_json()
        return resp.get_json()["id"]

    def status(self, evaluation_id: str) -> dict:
        return self.client.get(f"/api/evaluations/{evaluation_id}").get_json()

    def wait_until(self, evaluation_id: str, test, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while not test(body := self.status(evaluation_id)):
            assert time.monotonic() < deadline, (body["status"], body["progress"], self.logs_tail())
            time.sleep(0.05)
        return body

    def wait_finished(self, evaluation_id: str, timeout: float = 60) -> dict:
        return self.wait_until(evaluation_id, lambda b: b["status"] not in ("queued", "running"), timeout)

    def logs_tail(self) -> str:
        return "\n".join(f"--- {name}\n{self.log(name)[-3000:]}" for name in self.workers)

    def check_recorded_once(self, evaluation_id: str, total: int) -> None:
        """Every judgment has exactly one recorded verdict: asked once, or answered from the cache once."""
        rows = self.store.judgments(evaluation_id)
        assert len(rows) == total
        assert Counter(r["status"] for r in rows) == {"ok": total}
        assert all(r["attempts"] + r["cached"] == 1 for r in rows), \
            Counter((r["attempts"], r["cached"]) for r in rows)


def concurrency_bound() -> tuple[int, str]:
    """The most calls the judge may see at once: JUDGE_CONCURRENCY per deployment once the Redis-wide budget
    (judge/budget.py) is in place, JUDGE_CONCURRENCY per worker process before."""
    from judge import JudgeConfig

    if "budget_url" in JudgeConfig.__dataclass_fields__:  # the workers' CELERY_BROKER_URL turns it on
        return CONCURRENCY, "deployment-wide budget (judge/budget.py)"
    return CONCURRENCY * WORKERS, "per-process budget: concurrency x workers"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The result of the same file scored by the in-process thread runner (no broker), by method."""
    folder = tmp_path_factory.mktemp("reference")
    with JudgeServer() as server:
        env = {**judge_env(server), "JUDGE_CONCURRENCY": "16"}
        app = create_app({"TESTING": True, "SECRET_KEY": "test", "CELERY_BROKER_URL": "",
                          "DATABASE": str(folder / "db.sqlite"), "UPLOAD_FOLDER": str(folder / "uploads"),
                          "RESULTS_FOLDER": str(folder / "results"), "JUDGE_KEY_FILE": str(folder / "key"),
                          "RESUME_ON_START": False, "JUDGE_ENV": env})
        client = app.test_client()
        results = {}
        for sessions, tag in ((SESSIONS, ""), (40, " (cancelled)")):
            upload = client.post("/api/uploads", data={"file": (io.BytesIO(dialogue(sessions, tag)), "log.jsonl")},
                                 content_type="multipart/form-data").get_json()
            evaluation = create_evaluation(app.extensions["store"], upload["id"], environ=env)
            app.extensions["runner"].run(evaluation["id"])
            record = app.extensions["store"].get_evaluation(evaluation["id"])
            assert record["status"] == "done", record["error"]
            results[sessions] = record["result"]["methods"]
    return results


def postgres_url(request) -> str | None:
    """A fresh PostgreSQL database when the server can run here, else None (the deployment then uses SQLite)."""
    if postgres_bin() is None:
        return None
    try:
        return request.getfixturevalue("postgres_server").url()
    except pytest.skip.Exception:
        return None


@pytest.fixture(scope="module")
def deployment(redis_server, tmp_path_factory, request):
    """A deployment with two workers, shared by the tests that kill nothing; on PostgreSQL when it is installed
    (the killed-workers and gunicorn tests run on SQLite files)."""
    judge = Judge(LATENCY_S).start()
    judge.reset()
    dep = Deployment(tmp_path_factory.mktemp("deployment"), redis_server.url, judge, postgres_url(request))
    for name in ("w1", "w2"):
        dep.start_worker(name)
    for name in ("w1", "w2"):
        dep.wait_ready(name)
    yield dep
    dep.stop()
    judge.stop()


def test_large_evaluation_is_spread_over_the_workers_and_scored_like_in_process(deployment, reference):
    dep = deployment
    dep.judge.reset()
    evaluation_id = dep.evaluate(dep.upload(dialogue(SESSIONS)))
    body = dep.wait_finished(evaluation_id)

    assert body["status"] == "done", (body, dep.logs_tail())
    progress = body["progress"]
    assert (progress["done"], progress["total"], progress["failed"], progress["unparsed"]) == (TOTAL, TOTAL, 0, 0)
    dep.check_recorded_once(evaluation_id, TOTAL)
    assert dep.judge.requests == TOTAL and len(dep.judge.prompts) == TOTAL  # nothing was asked twice
    assert body["result"]["methods"] == reference[SESSIONS]
    written = json.loads((dep.folder / "results" / f"{evaluation_id}.json").read_text())
    assert written["methods"] == reference[SESSIONS]
    provenance = written["provenance"]  # scored on a worker, with its start and end times as the store keeps them
    assert (provenance["started_at"], provenance["finished_at"]) == (body["started_at"], body["finished_at"])
    assert provenance["kind"]["name"] == "dialogue" and len(provenance["judges"]) == 1
    bound, why = concurrency_bound()
    assert dep.judge.max_in_flight <= bound, (dep.judge.max_in_flight, why)
    # blocks of about 200 judgments went to both workers
    for name in ("w1", "w2"):
        assert "psb.judge_block" in dep.log(name), dep.log(name)[-2000:]


def test_cancel_stops_the_blocks_and_resume_finishes(deployment, reference):
    dep = deployment
    dep.judge.reset()
    total = 40 * ROUNDS * len(METHODS) * MODES
    evaluation_id = dep.evaluate(dep.upload(dialogue(40, " (cancelled)")))
    dep.wait_until(evaluation_id, lambda b: b["progress"]["done"] >= total // 4)

    resp = dep.client.post(f"/api/evaluations/{evaluation_id}/cancel")
    assert resp.status_code == 202, resp.get_json()
    # the blocks stop: after the calls in flight, nothing more is asked
    stable_since, seen = time.monotonic(), dep.judge.requests
    deadline = time.monotonic() + 20
    while time.monotonic() - stable_since < 1.5:
        assert time.monotonic() < deadline, "the judge is still being asked after cancel"
        if dep.judge.requests != seen:
            stable_since, seen = time.monotonic(), dep.judge.requests
        time.sleep(0.05)
    body = dep.wait_until(evaluation_id, lambda b: b["status"] == "cancelled" and b["result"] is not None, 20)
    assert body["progress"]["done"] < total
    assert body["progress"]["done"] == seen  # every call made was recorded
    assert dep.client.post(f"/api/evaluations/{evaluation_id}/cancel").status_code == 409

    resp = dep.client.post(f"/api/evaluations/{evaluation_id}/resume")
    assert resp.status_code == 202, resp.get_json()
    body = dep.wait_finished(evaluation_id)
    assert body["status"] == "done", (body, dep.logs_tail())
    assert body["progress"]["done"] == total
    dep.check_recorded_once(evaluation_id, total)
    assert dep.judge.requests == total  # resuming asked only what was never asked
    assert body["result"]["methods"] == reference[40]

    # the result page's buttons go through the same runner
    assert dep.client.post(f"/evaluations/{evaluation_id}/rerun-failed").status_code == 302
    assert dep.wait_finished(evaluation_id)["status"] == "done"
    assert dep.judge.requests == total


def test_a_kind_without_a_judge_is_scored_by_a_worker(deployment):
    from tests.kinds.agentbench.test_agentbench import OA_A, OA_B
    from tests.kinds.agentbench.test_agentbench_pipeline import outputs_zip

    dep = deployment
    evaluation_id = dep.evaluate(dep.upload(outputs_zip(), "outputs.zip"))
    body = dep.wait_finished(evaluation_id, 30)
    assert body["status"] == "done", (body, dep.logs_tail())
    assert body["result"]["agents"]["agent-a"]["oa"] == pytest.approx(OA_A, abs=1e-9)
    assert body["result"]["agents"]["agent-b"]["oa"] == pytest.approx(OA_B, abs=1e-9)
    assert (dep.folder / "results" / f"{evaluation_id}.json").exists()
    assert "psb.score" in dep.log("w1") + dep.log("w2")


def test_imported_scores_are_recorded_and_scored_by_a_worker_without_a_judge_call(deployment):
    from tests.kinds.dialogue.test_imported_scores import curve, dialogue, dims, replies, scores_jsonl

    dep = deployment
    upload_id = dep.upload(dialogue(), "imported.jsonl")
    attached = dep.client.post(f"/api/uploads/{upload_id}/scores",
                               data={"file": (io.BytesIO(scores_jsonl()), "scores.jsonl")},
                               content_type="multipart/form-data")
    assert attached.status_code == 201, attached.get_json()
    asked = dep.judge.requests
    started = dep.client.post("/api/evaluations", json={"upload_id": upload_id, "scores": attached.get_json()["id"]})
    assert started.status_code == 202, started.get_json()
    body = dep.wait_finished(started.get_json()["id"], 30)
    assert body["status"] == "done", (body, dep.logs_tail())
    assert Counter(r["status"] for r in dep.store.judgments(body["id"])) == {"ok": 2 * len(replies())}
    totals = {(s, k): sum(dims(i, k, m).values()) for i, s, k, m in replies() if m == "Ours"}
    assert [p["value"] for p in body["result"]["methods"]["Ours"]["al_curve"]] == pytest.approx(
        list(curve(totals).values()))
    assert dep.judge.requests == asked and "psb.score" in dep.log("w1") + dep.log("w2")


def test_flask_score_runs_in_the_foreground_with_a_broker(deployment, tmp_path):
    dep = deployment
    dep.judge.reset()
    path = tmp_path / "log.jsonl"
    path.write_bytes(dialogue(5, " (cli)"))
    dep.judge.latency_s = 0.4  # 100 calls, 8 at a time: the run outlasts three of the workers' sweeps
    started = time.monotonic()
    result = dep.app.test_cli_runner().invoke(args=["score", str(path)])
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started > 3 * SWEEP_S
    document = json.loads(result.stdout)
    assert all(m["judged"] == 5 * ROUNDS * MODES for m in document["methods"].values())
    assert dep.judge.requests == 5 * ROUNDS * len(METHODS) * MODES  # asked by this process, before it returned
    assert document["evaluation_id"] not in dep.log("w1") + dep.log("w2")  # no task was sent


def test_the_live_view_answers_from_a_web_app_that_did_not_start_the_run(deployment):
    from tests.web.test_live_results import TOTAL as LIVE_TOTAL
    from tests.web.test_live_results import Gate, answer_then_hold, by_hand, check_figures, scored_file, settled

    dep = deployment
    dep.judge.reset()
    gate = Gate("[[celery-live]]")
    dep.judge.hook = lambda request: dep.judge.count(request) or gate(request)
    evaluation_id = dep.evaluate(dep.upload(scored_file("[[celery-live]]"), "live.jsonl"))
    # another web machine of the deployment: its own app on the same database and broker, which started nothing
    other = create_app({**{k: v for k, v in dep.env.items() if not k.startswith("JUDGE_")}, "TESTING": True,
                        "SECRET_KEY": "test", "JUDGE_KEY_FILE": str(dep.folder / "judge_api_key"),
                        "WTF_CSRF_ENABLED": False, "JUDGE_ENV": judge_env(dep.judge)})
    try:
        answered = answer_then_hold(gate, 20)  # held well within JUDGE_TIMEOUT_S
        done = settled(dep.store, evaluation_id)
        assert 0 < done <= answered < LIVE_TOTAL
        body = other.test_client().get(f"/api/evaluations/{evaluation_id}/partial").get_json()
        assert (body["status"], body["partial"], body["judgments"]) == ("running", True, done)
        stored = dep.store.judgments(evaluation_id)
        check_figures(body["result"], stored)
        view = other.test_client().get(f"/evaluations/{evaluation_id}/live").get_data(as_text=True)
        assert f"from the {done} of {LIVE_TOTAL} judgments" in view
        fine = sum(f["judged_fine"] for f in by_hand(stored).values())
        assert f"n = {fine} fine judgments" in view
    finally:
        gate.open()
    final = dep.wait_finished(evaluation_id)
    assert final["status"] == "done", (final, dep.logs_tail())
    body = other.test_client().get(f"/api/evaluations/{evaluation_id}/partial").get_json()
    assert (body["partial"], body["result"]["methods"]) == (False, final["result"]["methods"])


def test_a_panel_of_judges_is_judged_by_the_workers_each_judgment_once(deployment):
    dep = deployment
    dep.judge.reset()
    dep.judge.models = {"judge-b": (-10, False)}
    sessions = 60
    resp = dep.client.post("/api/evaluations", json={"upload_id": dep.upload(dialogue(sessions, " (panel)")),
                                                     "judges": [{"model": "judge-a"}, {"model": "judge-b"}]})
    body = dep.wait_finished(resp.get_json()["id"])
    total = sessions * ROUNDS * len(METHODS) * MODES * 2
    assert body["status"] == "done", (body, dep.logs_tail())
    dep.check_recorded_once(body["id"], total)
    # Both judges see the same messages: every prompt asked exactly twice, once per model.
    assert dep.judge.requests == total and set(dep.judge.prompts.values()) == {2}
    by_judge = body["result"]["by_judge"]
    for method in METHODS:  # replies scored 40-95 by the local judge: -10 is never clamped
        assert by_judge["judge-b"]["methods"][method]["avg"] == pytest.approx(
            by_judge["judge-a"]["methods"][method]["avg"] - 10)


def test_a_judge_outage_is_retried_by_the_workers_and_leaves_no_hole(deployment):
    dep = deployment
    dep.judge.reset()
    sessions = 10
    total = sessions * ROUNDS * len(METHODS) * MODES
    upload_id = dep.upload(dialogue(sessions, " (outage)"))
    dep.judge.fail_for(1.5, "503")  # the first round and the first retry (after 0.3 s) fall in it
    evaluation_id = dep.evaluate(upload_id)
    seen = []
    body = dep.wait_until(evaluation_id, lambda b: seen.append(b["progress"]) or b["status"] not in (
        "queued", "running"))
    assert body["status"] == "done", (body, dep.logs_tail())
    assert body["failure"] is None and body["progress"]["failed"] == 0
    rows = dep.store.judgments(evaluation_id)
    assert len(rows) == total and Counter(r["status"] for r in rows) == {"ok": total}
    assert len(dep.judge.answered) == total and set(dep.judge.answered.values()) == {1}  # each answered once
    assert dep.judge.faults["503"] > 0 and dep.judge.requests == total + dep.judge.faults["503"]
    assert sum(r["attempts"] for r in rows) == dep.judge.requests
    assert any(p["waiting"] == "retry" and p["rate_per_s"] is None for p in seen)


def test_the_progress_never_runs_backwards_while_the_workers_ask_failed_judgments_again(deployment):
    dep = deployment
    dep.judge.reset()
    sessions = 5
    total = sessions * ROUNDS * len(METHODS) * MODES
    upload_id = dep.upload(dialogue(sessions, " (asked twice)"))
    dep.judge.fail_fraction(1.0, "503")  # each judgment's first call: all fail, then are asked again after a pause
    evaluation_id = dep.evaluate(upload_id)
    seen = []
    body = dep.wait_until(evaluation_id, lambda b: seen.append(b["progress"]) or b["status"] not in (
        "queued", "running"))
    assert body["status"] == "done" and dep.judge.faults["503"] == total, (body, dep.logs_tail())
    assert any(p["waiting"] == "retry" for p in seen)  # seen while they were to be asked again: all of them done once
    assert all(p["done"] == total for p in seen if p["waiting"] == "retry"), seen
    done = [p["done"] for p in seen]
    assert all(a <= b for a, b in zip(done, done[1:])), done


def test_a_dead_judge_fails_the_evaluation_on_the_workers_with_its_reason_and_resume_finishes(deployment):
    dep = deployment
    dep.judge.reset()
    sessions = 10
    total = sessions * ROUNDS * len(METHODS) * MODES
    upload_id = dep.upload(dialogue(sessions, " (refused key)"))
    dep.judge.fail_always("401")
    started = time.monotonic()
    evaluation_id = dep.evaluate(upload_id)
    body = dep.wait_finished(evaluation_id)
    elapsed = time.monotonic() - started
    dep.judge.fail_always(None)
    assert body["status"] == "failed", (body, dep.logs_tail())
    assert body["error"].startswith("Stopped asking the judge: the API key was rejected (HTTP 401")
    assert elapsed < 30, elapsed
    # each block that was already at work sent its probe, no more: two workers of two threads
    assert dep.judge.requests <= 2 * WORKERS, dep.judge.stats()
    assert (body["progress"]["done"], body["progress"]["failed"]) == (0, 0)
    page = dep.client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert "Stopped asking the judge: the API key was rejected (HTTP 401" in page
    asked = dep.judge.requests
    assert dep.client.post(f"/api/evaluations/{evaluation_id}/resume").status_code == 202
    body = dep.wait_finished(evaluation_id)
    assert body["status"] == "done", (body, dep.logs_tail())
    assert dep.judge.requests - asked == total
    dep.check_recorded_once(evaluation_id, total)


def test_a_judge_outage_longer_than_the_bound_ends_incomplete_on_the_workers(deployment):
    dep = deployment
    dep.judge.reset()
    sessions = 5
    total = sessions * ROUNDS * len(METHODS) * MODES  # 100
    upload_id = dep.upload(dialogue(sessions, " (long outage)"))
    dep.judge.fail_for(120, "503")
    evaluation_id = dep.evaluate(upload_id)
    body = dep.wait_finished(evaluation_id)
    dep.judge.fail_for(0, "503")
    assert body["status"] == "incomplete", (body, dep.logs_tail())
    assert (body["progress"]["done"], body["progress"]["failed"]) == (total, total)
    assert dep.judge.requests == 5 * total  # the first round and 4 retries, one attempt each (JUDGE_MAX_RETRIES 0)
    reason = "InternalServerError: HTTP 503: Simulated server error 503. (gave up after 1 attempt)"
    assert body["failure"] == {"failed": total, "reason": reason}
    assert body["error"] == f"{total} judgments failed after every retry; the commonest reason: {reason}"
    page = dep.client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
    assert f"Incomplete: {total} judgments failed after every retry." in page
    assert f"Re-run {total} failed and unparsed" in page


def test_workers_killed_mid_run_finish_without_paying_twice(redis_server, tmp_path, reference):
    judge = Judge(LATENCY_S).start()
    judge.reset()
    dep = Deployment(tmp_path, redis_server.url, judge)
    try:
        for name in ("w1", "w2"):
            dep.start_worker(name)
        evaluation_id = dep.evaluate(dep.upload(dialogue(SESSIONS)))
        dep.wait_until(evaluation_id, lambda b: b["progress"]["done"] >= 0.3 * TOTAL)
        dep.kill("w1")
        dep.wait_until(evaluation_id, lambda b: b["progress"]["done"] >= 0.6 * TOTAL)
        dep.kill("w2")
        time.sleep(0.3)  # answers to the calls in flight reach dead workers
        assert dep.status(evaluation_id)["progress"]["done"] < TOTAL
        dep.start_worker("w3")
        body = dep.wait_finished(evaluation_id, 90)
    finally:
        dep.stop()
        judge.stop()

    assert body["status"] == "done", (body, dep.logs_tail())
    progress = body["progress"]
    assert (progress["done"], progress["total"], progress["failed"], progress["unparsed"]) == (TOTAL, TOTAL, 0, 0)
    dep.check_recorded_once(evaluation_id, TOTAL)
    assert body["result"]["methods"] == reference[SESSIONS]
    assert len(judge.prompts) == TOTAL  # every judgment was asked
    repeated = judge.requests - TOTAL
    # only calls in flight when a worker was killed were paid twice: at most JUDGE_CONCURRENCY per killed worker
    assert 0 <= repeated <= CONCURRENCY * WORKERS, repeated
    assert max(judge.prompts.values()) <= 2
    bound, why = concurrency_bound()
    assert judge.max_in_flight <= bound, (judge.max_in_flight, why)


def test_a_prefork_worker_keeps_its_judge_connections_from_block_to_block(redis_server, tmp_path, reference):
    # The pool of docs/team-deployment.md's workers (Celery's default), one process: it judges the blocks one after
    # another on one thread, which keeps its connections (judge.keep_connections) until it ends.
    judge = Judge(LATENCY_S).start()
    judge.reset()
    dep = Deployment(tmp_path, redis_server.url, judge)
    try:
        worker = dep.start_worker("w1", pool="prefork", concurrency=1)
        evaluation_id = dep.evaluate(dep.upload(dialogue(40, " (cancelled)")))  # 800 judgments: 4 blocks
        body = dep.wait_finished(evaluation_id)
        assert body["status"] == "done", (body, dep.logs_tail())
        assert body["result"]["methods"] == reference[40]
        assert dep.log("w1").count("psb.judge_block") >= 2 * 4  # received and succeeded
        # the first block's connections, at most one per call in flight; a new client per block: about 8 each
        assert judge.requests == 800 and judge.accepted <= CONCURRENCY, judge.accepted
        worker.terminate()  # a warm shutdown: the pool's process closes what it kept
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the worker did not stop within 30 s of its SIGTERM:\n{dep.log('w1')[-3000:]}")
        deadline = time.monotonic() + 10
        while judge.stats()["open_connections"]:
            assert time.monotonic() < deadline, judge.stats()
            time.sleep(0.05)
        assert "Unclosed" not in dep.log("w1"), dep.log("w1")[-3000:]
    finally:
        dep.stop()
        judge.stop()


def test_a_redis_restart_without_persistence_mid_run_is_healed_by_the_sweep(tmp_path, reference):
    broker = Redis(tmp_path / "redis")  # its own server: this test restarts it
    judge = Judge(LATENCY_S).start()
    judge.reset()
    dep = Deployment(tmp_path / "deployment", broker.url, judge)
    try:
        evaluation_id = dep.evaluate(dep.upload(dialogue(SESSIONS)))
        # no worker yet: the progress says so, instead of a pace
        time.sleep(0.5)
        body = dep.status(evaluation_id)
        assert body["status"] == "queued" and body["progress"]["waiting"] == "worker", body
        assert body["progress"]["rate_per_s"] is None and body["progress"]["eta_s"] is None
        page = dep.client.get(f"/evaluations/{evaluation_id}").get_data(as_text=True)
        assert "Waiting for a worker" in page

        for name in ("w1", "w2"):
            dep.start_worker(name)
        dep.wait_until(evaluation_id, lambda b: b["progress"]["done"] >= 0.3 * TOTAL)
        assert dep.status(evaluation_id)["progress"]["waiting"] is None  # blocks hold their leases
        broker.restart()  # every queued task, lease and counter is gone
        body = dep.wait_finished(evaluation_id, 90)
    finally:
        dep.stop()
        judge.stop()
        broker.stop()

    assert body["status"] == "done", (body, dep.logs_tail())
    progress = body["progress"]
    assert (progress["done"], progress["total"], progress["failed"], progress["unparsed"]) == (TOTAL, TOTAL, 0, 0)
    dep.check_recorded_once(evaluation_id, TOTAL)
    assert body["result"]["methods"] == reference[SESSIONS]
    assert len(judge.prompts) == TOTAL
    # the blocks whose tasks were lost were sent again by a sweep, not by a person nor a new worker
    assert "sweep: sent again 1 evaluation(s) whose tasks were lost" in dep.log("w1") + dep.log("w2")
    assert (dep.log("w1") + dep.log("w2")).count("requeued") == 1  # by the first worker, at its start


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_gunicorn_with_two_processes_leaves_evaluations_to_the_workers(redis_server, tmp_path):
    if importlib.util.find_spec("gunicorn") is None:
        pytest.skip("gunicorn is not installed")
    judge = Judge(LATENCY_S).start()
    judge.reset()
    dep = Deployment(tmp_path, redis_server.url, judge)
    port = free_port()
    access = tmp_path / "access.log"
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-w", "2", "-b", f"127.0.0.1:{port}", "--access-logfile", str(access),
         "--access-logformat", "%(p)s %(r)s", "app:create_app()"],
        cwd=ROOT, env={**os.environ, **dep.env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    counter = iter(range(10**6))
    try:
        deadline = time.monotonic() + 30
        while True:
            assert server.poll() is None, server.stderr.read().decode()
            try:
                if _get(f"{base}/api/evaluations")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "gunicorn did not start"
            time.sleep(0.1)

        def ask(path: str) -> tuple[int, int, bytes]:
            """(gunicorn process, HTTP status, body) of one request."""
            n = next(counter)
            status, body = _get(f"{base}{path}{'&' if '?' in path else '?'}n={n}")
            for _attempt in range(50):
                found = re.findall(rf"^<(\d+)> GET \S*[?&]n={n} ", access.read_text(), re.M)
                if found:
                    return int(found[0]), status, body
                time.sleep(0.02)
            raise AssertionError(f"request {n} not in the access log")

        # an upload and an evaluation through the HTTP API of gunicorn
        boundary = "psbtest"
        data = dialogue(20)
        head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"log.jsonl\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n")
        payload = head.encode() + data + f"\r\n--{boundary}--\r\n".encode()
        request = urllib.request.Request(f"{base}/api/uploads", data=payload,
                                         headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        upload_id = json.loads(urllib.request.urlopen(request, timeout=10).read())["id"]
        request = urllib.request.Request(f"{base}/api/evaluations", data=json.dumps({"upload_id": upload_id}).encode(),
                                         headers={"Content-Type": "application/json"})
        evaluation_id = json.loads(urllib.request.urlopen(request, timeout=10).read())["id"]
        total = 20 * ROUNDS * len(METHODS) * MODES

        # pages and API from both processes (two requests at once: a sync worker serves one at a time)
        paths = ["/", "/evaluations", f"/evaluations/{evaluation_id}", f"/api/evaluations/{evaluation_id}",
                 f"/api/uploads/{upload_id}"]
        served: dict[str, set] = {p: set() for p in paths}
        with ThreadPoolExecutor(2) as pool:
            for _round in range(40):
                for path, (pid, status, _body) in zip(paths + paths, pool.map(ask, paths + paths)):
                    assert status == 200, (path, status)
                    served[path].add(pid)
                if all(len(pids) == 2 for pids in served.values()):
                    break
        assert all(len(pids) == 2 for pids in served.values()), served

        # no gunicorn process runs it: it waits for a worker
        time.sleep(1.5)
        body = json.loads(ask(f"/api/evaluations/{evaluation_id}")[2])
        assert body["status"] == "queued" and body["progress"]["done"] == 0, body
        assert judge.requests == 0
        assert dep.app.extensions["runner"].resume() == []  # what the first request of a web process calls

        # the broker lost its tasks (a Redis without persistence restarted): `flask jobs requeue` sends them again
        broker = redis.Redis.from_url(redis_server.url)
        assert broker.llen(dep.queue) == 1
        broker.delete(dep.queue)
        result = dep.app.test_cli_runner().invoke(args=["jobs", "requeue"])
        assert result.exit_code == 0 and evaluation_id in result.output, result.output
        assert broker.llen(dep.queue) == 1
        # ... and so does the first worker of a deployment that had none alive
        broker.delete(dep.queue)
        dep.start_worker("w1")
        pairs = []  # two reads at once, pair after pair, while it runs: [(gunicorn process, done, status)] * 2
        with ThreadPoolExecutor(2) as pool:
            while True:
                pair = [(pid, json.loads(raw)["progress"]["done"], json.loads(raw)["status"])
                        for pid, _status, raw in pool.map(ask, [f"/api/evaluations/{evaluation_id}"] * 2)]
                pairs.append(pair)
                if all(status not in ("queued", "running") for _pid, _done, status in pair):
                    break
                assert len(pairs) < 2000, "the evaluation did not finish"
                time.sleep(0.02)
        assert pairs[-1][0][2] == "done", (pairs[-1], dep.logs_tail())
        assert "requeued 1 unfinished evaluation(s)" in dep.log("w1")
        live = {pid for pair in pairs for pid, done, _status in pair if 0 < done < total}
        assert live == set().union(*served.values()), "live progress read from both processes"
        # one progress, whichever process answers: a pair read after another never shows less
        for before, after in zip(pairs, pairs[1:]):
            assert min(done for _pid, done, _s in after) >= max(done for _pid, done, _s in before), (before, after)
        final = [json.loads(ask(f"/api/evaluations/{evaluation_id}")[2]) for _ in range(10)]
        assert all(f["progress"]["done"] == total and f["status"] == "done" for f in final)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        dep.stop()
        judge.stop()


@pytest.mark.parametrize("value, expected", [("", 20.0), ("1.5", 1.5), ("0", None), ("-3", None), ("often", None)])
def test_the_sweep_interval_setting(value, expected):
    from pipeline.celery_tasks import sweep_interval

    if expected is None:
        with pytest.raises(ValueError, match="CELERY_SWEEP_S must be a number of seconds > 0"):
            sweep_interval({"CELERY_SWEEP_S": value})
    else:
        assert sweep_interval({"CELERY_SWEEP_S": value}) == expected


def test_a_task_its_worker_terminated_is_not_a_failed_evaluation():
    from pipeline.celery_tasks import stopped_from_outside

    # Celery terminates a late-acknowledged task when the broker connection is lost: billiard raises SystemExit in
    # the task, and unwinding the judge's event loop can raise another error from it.
    try:
        try:
            raise SystemExit(-241)
        except SystemExit:
            raise RuntimeError("Event loop stopped before Future completed.")
    except RuntimeError as exc:
        unwound = exc
    assert isinstance(stopped_from_outside(unwound), SystemExit)
    assert stopped_from_outside(ValueError("a real failure")) is None
    try:
        try:
            raise KeyError("x")
        except KeyError:
            raise ValueError("y")
    except ValueError as exc:
        assert stopped_from_outside(exc) is None


def test_a_worker_starting_leaves_what_it_loaded_out_of_the_garbage_collectors_rounds_and_spaces_young_ones():
    import gc

    from celery import signals

    import pipeline.celery_tasks  # noqa: F401 - connects the workers' signals

    before, threshold = gc.get_freeze_count(), gc.get_threshold()  # (the first app this process built froze then)
    try:
        signals.worker_init.send(sender=None)
        assert gc.get_freeze_count() > max(before, 10_000)  # this process's modules, as a worker's app and libraries
        assert gc.get_threshold() == (10_000, *threshold[1:])  # young collections spaced for judging
    finally:
        gc.set_threshold(*threshold)
        if not before:
            gc.unfreeze()


def test_a_worker_loads_the_judges_http_client_before_its_pool_starts():
    # so that each process of the pool inherits it rather than loading it for its first block
    code = ("import sys; from celery import signals; import pipeline.celery_tasks; "
            "assert 'aiohttp' not in sys.modules; signals.worker_init.send(sender=None); "
            "assert 'judge.http' in sys.modules and 'aiohttp' in sys.modules")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
