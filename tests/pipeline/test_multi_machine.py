"""A team deployment on four "machines" that share nothing but the services.

Web A and web B (gunicorn, two processes each) and two Celery workers, each in its own working folder with its own
empty `instance/`, share only DATABASE_URL (PostgreSQL), CELERY_BROKER_URL (Redis), STORAGE_URL (an S3 server) and
the judge settings. The workers are started with the exact `celery` line of docs/team-deployment.md. Sign in on A,
upload and start on A, watch the progress on B; one worker is killed with kill -9 and Redis is restarted during the
run with its append-only file, as a deployment runs it (the tasks delivered to the workers then wait in it for a
visibility timeout of an hour; a restart of Redis without persistence, which empties it, is healed by the same sweep
in tests/pipeline/test_celery.py); the workers sweep for lost work every 2 s (CELERY_SWEEP_S, 20 s by default), so
that the test waits for the recovery, not for the clock; the result is read on B. Every judgment is in the store
exactly once, the metrics are those of the in-process runner (`python app.py`) on the same file, at most
JUDGE_CONCURRENCY calls were paid twice per fault, and the judge never saw more than JUDGE_CONCURRENCY calls at once.
"""
from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import requests

from app import create_app
from pipeline.evaluations import create_evaluation
from storage.store import Store
from tests.conftest import ROOT
from tests.doc_commands import DOCS, commands
from tests.pipeline.test_celery import Judge, dialogue
from tests.services import Redis, free_port, wait_for_port

CONCURRENCY = 6
SESSIONS, ROUNDS, METHODS, MODES = 48, 5, 2, 2
TOTAL = SESSIONS * ROUNDS * METHODS * MODES  # 960 judgments: five blocks (CELERY_BLOCK_JUDGMENTS 200)
SWEEP_S = 2
FAULTS = 2  # a worker killed, Redis restarted
PASSWORD = "multi-machine-pw-1"


def _worker_command() -> str:
    [line] = [c for c in commands(DOCS / "team-deployment.md", "Deploying for a team") if c.startswith("celery ")]
    return line


class Machine:
    """One process of the deployment in its own working folder with its own instance/."""

    def __init__(self, folder: Path, env: dict, command: str):
        folder.mkdir(parents=True)
        self.folder, self.log = folder, folder / "out.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(["bash", "-c", command], cwd=folder, stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True,
                                            env={**env, "INSTANCE_PATH": str(folder / "instance")})

    def kill(self) -> None:
        """kill -9 the whole process group, as when a machine vanishes."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(10)

    def stop(self) -> None:
        """End it (SIGTERM, then SIGKILL)."""
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(20)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            self.kill()

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def _sign_in(base: str) -> tuple[requests.Session, str]:
    """A browser session signed in on `base`, and an API token made on its account page."""
    session = requests.Session()
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', session.get(f"{base}/login").text).group(1)
    page = session.post(f"{base}/login", data={"csrf_token": csrf, "name": "alice", "password": PASSWORD})
    assert "/login" not in page.url, page.text[:300]
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', session.get(f"{base}/account").text).group(1)
    page = session.post(f"{base}/account/tokens", data={"csrf_token": csrf, "name": "multi"})
    return session, re.search(r'class="new-token">(psb_[^<]+)<', page.text).group(1)


def _reference(folder: Path, data: bytes) -> dict:
    """The metrics of the same file evaluated by the in-process thread runner, as `python app.py` does."""
    with Judge(0.0) as server:
        env = {"JUDGE_BASE_URL": server.url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test",
               "JUDGE_CONCURRENCY": "8"}
        app = create_app({"TESTING": True, "SECRET_KEY": "test", "CELERY_BROKER_URL": "", "DATABASE_URL": None,
                          "STORAGE_URL": None, "DATABASE": str(folder / "db.sqlite"),
                          "UPLOAD_FOLDER": str(folder / "uploads"), "RESULTS_FOLDER": str(folder / "results"),
                          "RESUME_ON_START": False, "JUDGE_ENV": env})
        upload = app.test_client().post("/api/uploads", data={"file": (io.BytesIO(data), "log.jsonl")},
                                        content_type="multipart/form-data").get_json()
        evaluation = create_evaluation(app.extensions["store"], upload["id"], environ=env)
        app.extensions["runner"].run(evaluation["id"])
        record = app.extensions["store"].get_evaluation(evaluation["id"])
        assert record["status"] == "done", record["error"]
        return record["result"]["methods"]


def test_two_webs_and_two_workers_share_only_the_services(tmp_path, postgres_server, s3_server):
    database_url, bucket = postgres_server.url(), s3_server.bucket()
    redis = Redis(tmp_path / "redis", persistent=True)
    judge = Judge(0.02).start()
    judge.reset()
    shared = {**{k: v for k, v in os.environ.items()
                 if not k.startswith(("JUDGE_", "DATABASE", "CELERY_", "UPLOAD_", "RESULTS_", "STORAGE_", "AWS_",
                                      "SECRET_", "SETTINGS_", "AUTH", "RATELIMIT"))},
              "PYTHONPATH": str(ROOT), "AUTH": "on", "DATABASE_URL": database_url, "CELERY_BROKER_URL": redis.url,
              "STORAGE_URL": f"s3://{bucket}/team", **s3_server.environ,
              "JUDGE_BASE_URL": judge.url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test",
              "JUDGE_CONCURRENCY": str(CONCURRENCY), "JUDGE_MAX_RETRIES": "0", "JUDGE_TIMEOUT_S": "10",
              "CELERY_SWEEP_S": str(SWEEP_S), "CELERY_BLOCK_JUDGMENTS": "200"}
    admin = subprocess.run(["flask", "--app", "app", "users", "create", "alice", "--admin", "--password-stdin"],
                           cwd=ROOT, env=shared, input=PASSWORD + "\n", text=True, capture_output=True, timeout=60)
    assert admin.returncode == 0, admin.stderr
    ports = {"a": free_port(), "b": free_port()}
    machines = {name: Machine(tmp_path / f"web-{name}", shared, f"gunicorn -w 2 -b 127.0.0.1:{port} 'app:create_app()'")
                for name, port in ports.items()}
    machines |= {f"worker-{n}": Machine(tmp_path / f"worker-{n}", shared, _worker_command()) for n in (1, 2)}
    data = dialogue(SESSIONS)
    try:
        for name, port in ports.items():
            wait_for_port(port, machines[name].process, f"web {name}")
        web_a, web_b = (f"http://127.0.0.1:{port}" for port in ports.values())
        browser, token = _sign_in(web_a)
        assert browser.get(f"{web_b}/evaluations", allow_redirects=False).status_code == 200  # one sign-in for both
        api = {"Authorization": f"Bearer {token}"}
        upload = requests.post(f"{web_a}/api/uploads", headers=api, files={"file": ("log.jsonl", data)}).json()
        started = requests.post(f"{web_a}/api/evaluations", headers=api, json={"upload_id": upload["id"]}).json()

        def progress_on_b(until, timeout: float = 120) -> dict:
            deadline = time.monotonic() + timeout
            while True:
                body = requests.get(f"{web_b}/api/evaluations/{started['id']}", headers=api).json()
                if until(body):
                    return body
                assert time.monotonic() < deadline, (body, {n: m.output() for n, m in machines.items()})
                time.sleep(0.1)

        progress_on_b(lambda b: b["progress"]["done"] >= 0.25 * TOTAL)
        machines["worker-1"].kill()
        progress_on_b(lambda b: b["progress"]["done"] >= 0.5 * TOTAL)
        redis.restart()
        body = progress_on_b(lambda b: b["status"] not in ("queued", "running"), timeout=150)
        result = requests.get(f"{web_b}/evaluations/{started['id']}.json", headers=api).json()
    finally:
        for machine in machines.values():
            machine.stop()
        redis.stop()
        judge.stop()

    assert body["status"] == "done", (body, {n: m.output() for n, m in machines.items()})
    rows = Store(database_url).judgments(started["id"])
    assert len(rows) == TOTAL and Counter(r["status"] for r in rows) == {"ok": TOTAL}
    assert all(r["attempts"] + r["cached"] == 1 for r in rows), Counter((r["attempts"], r["cached"]) for r in rows)
    assert result["methods"] == _reference(tmp_path / "reference", data)
    assert len(judge.prompts) == TOTAL
    assert judge.requests - TOTAL <= CONCURRENCY * FAULTS, judge.requests - TOTAL
    assert judge.max_in_flight <= CONCURRENCY, judge.max_in_flight
    for name in ("web-a", "web-b", "worker-1", "worker-2"):
        assert not any((tmp_path / name / "instance").glob("*")), f"{name} kept state of its own"
