"""A server killed with SIGKILL in the middle of an evaluation resumes it on restart, paying for nothing twice."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter

from tests.conftest import ROOT, jsonl, session_line

SERVE = """
import sys, json
from app import create_app
config = json.loads(sys.argv[1])
app = create_app(config)
app.extensions["runner"].resume()
app.run(port=int(sys.argv[2]), threaded=True, use_reloader=False)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(config: dict, port: int, env: dict) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", SERVE, json.dumps(config), str(port)], cwd=ROOT,
                            env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/evaluations", timeout=1)
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("server did not start: " + proc.stderr.read().decode())


def call(port: int, path: str, body: bytes | None = None, headers: dict | None = None) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def upload(port: int, data: bytes) -> str:
    boundary = "resumetest"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"log.jsonl\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return call(port, "/api/uploads", body, {"Content-Type": f"multipart/form-data; boundary={boundary}"})["id"]


def test_kill_9_mid_run_then_restart_finishes_without_paying_twice(tmp_path, judge_server):
    prompts: Counter = Counter()
    lock = threading.Lock()

    def record(request: dict):
        with lock:
            prompts[hashlib.sha256(json.dumps(request["body"], sort_keys=True).encode()).hexdigest()] += 1
        return None

    judge_server.hook = record
    judge_server.latency_s = 0.05
    concurrency = 4
    env = {"JUDGE_BASE_URL": judge_server.url, "JUDGE_API_KEY": "sk-test", "JUDGE_MODEL": "judge-test",
           "JUDGE_CONCURRENCY": str(concurrency), "JUDGE_MAX_RETRIES": "0"}
    config = {"DATABASE": str(tmp_path / "db.sqlite"), "UPLOAD_FOLDER": str(tmp_path / "uploads"),
              "RESULTS_FOLDER": str(tmp_path / "results"), "SECRET_KEY": "x",
              "JUDGE_KEY_FILE": str(tmp_path / "key")}
    sessions = [session_line(f"s{i:02d}", 5, user_profile=f"profile {i}") for i in range(30)]
    total = 30 * 5 * 2 * 2
    port = free_port()

    server = start_server(config, port, env)
    try:
        upload_id = upload(port, jsonl(*sessions))
        created = call(port, "/api/evaluations", json.dumps({"upload_id": upload_id}).encode(),
                       {"Content-Type": "application/json"})
        deadline = time.monotonic() + 30
        while call(port, f"/api/evaluations/{created['id']}")["progress"]["done"] < total // 3:
            assert time.monotonic() < deadline, "no progress before the kill"
            time.sleep(0.05)
        server.send_signal(signal.SIGKILL)
        server.wait(10)
        time.sleep(0.3)  # let answers to calls that were in flight arrive at a dead client
        paid_before_restart = sum(prompts.values())
        assert paid_before_restart < total
    finally:
        if server.poll() is None:
            server.kill()

    server = start_server(config, port, env)
    try:
        deadline = time.monotonic() + 60
        while (body := call(port, f"/api/evaluations/{created['id']}"))["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, body
            time.sleep(0.1)
    finally:
        server.kill()
        server.wait(10)

    assert body["status"] == "done", body
    progress = body["progress"]
    assert (progress["done"], progress["total"], progress["failed"], progress["unparsed"]) == (total, total, 0, 0)
    assert len(prompts) == total  # every judgment was asked for
    repeated = sum(n - 1 for n in prompts.values())
    # Only calls that were in flight at the moment of the kill can have been paid twice.
    assert repeated <= concurrency, repeated
    result = body["result"]
    assert all(m["judged"] == 30 * 5 * 2 for m in result["methods"].values())


def test_the_thread_runner_judges_a_large_evaluation_block_by_block(client, judge_server, monkeypatch):
    from pipeline import evaluations
    from pipeline.evaluation_steps import Pipeline
    from tests.conftest import jsonl, session_line, wait_for
    from tests.web.test_api import upload

    monkeypatch.setattr(evaluations, "BLOCK_JUDGMENTS", 24)  # 2 sessions (24 judgments) at a time, so 3 blocks
    blocks, judge = [], Pipeline.judge

    def counted(self, kind, job, pending, *args, **kwargs):
        blocks.append(sorted({key[0] for key in pending}))
        return judge(self, kind, job, pending, *args, **kwargs)
    monkeypatch.setattr(Pipeline, "judge", counted)
    upload_id = upload(client, jsonl(*(session_line(f"b{i}", 3, user_profile=f"runner {i}") for i in range(6)))).get_json()["id"]
    one_go = wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"])
    asked = judge_server.requests
    assert one_go["status"] == "done" and one_go["progress"]["done"] == one_go["progress"]["total"] == 72 == asked
    assert blocks == [[0, 1], [2, 3], [4, 5]]
    monkeypatch.setattr(evaluations, "BLOCK_JUDGMENTS", 1_000_000)
    again = wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id,
                                                                   "judge": {"use_cache": False}}).get_json()["id"])
    assert again["result"]["methods"] == one_go["result"]["methods"]  # the same scores, block by block or at once


def test_a_plan_cut_short_is_completed_by_the_next_run(client, app, judge_server, monkeypatch):
    from pipeline import evaluation_steps
    from tests.conftest import jsonl, session_line, wait_for
    from tests.web.test_api import upload

    monkeypatch.setattr(evaluation_steps, "PLAN_CHUNK", 10)  # 72 judgments planned in 8 transactions
    store = app.extensions["store"]
    add_pending, calls = store.add_pending, []

    def dies_on_the_third(evaluation_id, rows):
        calls.append(len(rows))
        if len(calls) == 3:
            raise OSError("disk full")  # the process dies here: two chunks are kept, the rest is not planned
        return add_pending(evaluation_id, rows)
    monkeypatch.setattr(store, "add_pending", dies_on_the_third)
    upload_id = upload(client, jsonl(*(session_line(f"p{i}", 3, user_profile=f"planner {i}")
                                       for i in range(6)))).get_json()["id"]
    first = wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"])
    assert first["status"] == "failed" and "disk full" in first["error"]
    assert store.progress(first["id"])["total"] == 20 and judge_server.requests == 0
    assert client.post(f"/api/evaluations/{first['id']}/resume").status_code == 202
    body = wait_for(client, first["id"])
    assert body["status"] == "done" and body["progress"]["total"] == body["progress"]["done"] == 72
    assert judge_server.requests == 72 and max(calls) == 10


def test_a_finished_evaluation_is_not_resumed_but_its_failures_can_be_asked_again(client, judge_server):
    from tests.conftest import wait_for
    from tests.web.test_api import upload

    upload_id = upload(client, jsonl(session_line("done-1", 2), session_line("done-2", 2))).get_json()["id"]
    done = wait_for(client, client.post("/api/evaluations", json={"upload_id": upload_id}).get_json()["id"])
    assert done["status"] == "done"
    asked = judge_server.requests
    resp = client.post(f"/api/evaluations/{done['id']}/resume")
    assert resp.status_code == 409 and "has finished" in resp.get_json()["error"]
    assert client.get(f"/api/evaluations/{done['id']}").get_json()["status"] == "done"
    assert judge_server.requests == asked  # nothing asked again
    resp = client.post(f"/api/evaluations/{done['id']}/rerun-failed")  # allowed: none failed, so none asked
    assert resp.status_code == 202
    assert wait_for(client, done["id"])["status"] == "done" and judge_server.requests == asked
